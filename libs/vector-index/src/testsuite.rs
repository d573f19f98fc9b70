//! The contract every `VectorIndex` adapter must honour. Each case takes an
//! `open` function that opens the SAME index each time it is called (a new
//! instance is how a restart is simulated; a case drops the old instance
//! first); [`vector_index_contract_tests!`](crate::vector_index_contract_tests) turns the cases into one test
//! each for an adapter. Cases need a dimension of at least 8.
//!
//! Each case is built so that it fails when its behaviour is missing: a
//! filter case always shows the excluded point is found without the filter,
//! and runs the filtered search in all three modes.

use std::future::Future;
use std::sync::Arc;

use mnemo_domain::{MemoryId, MemoryKind, MemoryState, SubjectId, TenantId};

use crate::fusion::position_score;
use crate::{
    Hit, Point, PointPayload, SearchFilter, SearchMode, SearchRequest, VectorIndex,
    VectorIndexError,
};

pub fn tenant(name: &str) -> TenantId {
    TenantId::parse(name).unwrap()
}

pub fn subject(name: &str) -> SubjectId {
    SubjectId::parse(name).unwrap()
}

/// An L2-normalised vector with the given weights on the given axes.
pub fn vector(dimension: usize, axes: &[(usize, f32)]) -> Vec<f32> {
    let mut v = vec![0.0; dimension];
    for (axis, weight) in axes {
        v[axis % dimension] += weight;
    }
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    v.iter().map(|x| x / norm).collect()
}

/// A deterministic unit vector of `dimension` pseudo-random weights per
/// seed (xorshift): vectors that spread over the space, as embeddings do,
/// and that a WAL or a segment cannot store smaller than their size.
pub fn spread(dimension: usize, seed: u64) -> Vec<f32> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let axes: Vec<(usize, f32)> = (0..dimension)
        .map(|axis| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (axis, (state >> 40) as f32 / (1u64 << 24) as f32 - 0.5)
        })
        .collect();
    vector(dimension, &axes)
}

/// The unit vector along `axis`.
pub fn axis(dimension: usize, axis: usize) -> Vec<f32> {
    vector(dimension, &[(axis, 1.0)])
}

/// An Active fact with no tags, session or agent, created at 1_700_000_000.
pub fn payload(tenant: &TenantId, subject: &SubjectId) -> PointPayload {
    PointPayload {
        tenant: tenant.clone(),
        subject: subject.clone(),
        point_type: crate::PointType::Memory,
        kind: MemoryKind::Fact,
        tags: Vec::new(),
        state: MemoryState::Active,
        session: None,
        agent: None,
        created_at: 1_700_000_000,
        updated_at: 1_700_000_000,
        importance: 0.5,
    }
}

pub fn point(tenant: &TenantId, subject: &SubjectId, text: &str, dense: Vec<f32>) -> Point {
    Point {
        id: MemoryId::new(),
        dense,
        text: text.to_owned(),
        payload: payload(tenant, subject),
    }
}

pub fn semantic(dense: Vec<f32>) -> SearchRequest {
    SearchRequest {
        dense: Some(dense),
        mode: SearchMode::Semantic,
        ..SearchRequest::default()
    }
}

pub fn keyword(text: &str) -> SearchRequest {
    SearchRequest {
        text: Some(text.to_owned()),
        mode: SearchMode::Keyword,
        ..SearchRequest::default()
    }
}

pub fn hybrid(dense: Vec<f32>, text: &str) -> SearchRequest {
    SearchRequest {
        dense: Some(dense),
        text: Some(text.to_owned()),
        mode: SearchMode::Hybrid,
        ..SearchRequest::default()
    }
}

pub fn ids(hits: &[Hit]) -> Vec<MemoryId> {
    hits.iter().map(|h| h.id).collect()
}

fn sorted(mut ids: Vec<MemoryId>) -> Vec<MemoryId> {
    ids.sort();
    ids
}

async fn search(index: &dyn VectorIndex, t: &TenantId, request: SearchRequest) -> Vec<Hit> {
    index.search(t, &request).await.unwrap()
}

/// Runs the same filtered search in all three modes (every point of these
/// cases shares one text and one vector) and checks each returns `expected`.
async fn assert_filter_in_every_mode(
    index: &dyn VectorIndex,
    t: &TenantId,
    filter: SearchFilter,
    expected: &[MemoryId],
) {
    let dense = axis(index.dimension(), 0);
    for request in [
        semantic(dense.clone()),
        keyword(FILTER_TEXT),
        hybrid(dense.clone(), FILTER_TEXT),
    ] {
        let mode = request.mode;
        let request = SearchRequest {
            filter: filter.clone(),
            ..request
        };
        let found = sorted(ids(&search(index, t, request).await));
        assert_eq!(found, sorted(expected.to_vec()), "{mode:?} with {filter:?}");
    }
}

const FILTER_TEXT: &str = "quarterly budget review";

/// Changes one payload field of a filter-case point.
type Tweak = Box<dyn Fn(&mut PointPayload) + Send>;

/// Points for the filter cases: same text, same vector, payload tweaked.
async fn upsert_variants(
    index: &dyn VectorIndex,
    t: &TenantId,
    tweaks: Vec<Tweak>,
) -> Vec<MemoryId> {
    let s = subject("s1");
    let points: Vec<Point> = tweaks
        .iter()
        .map(|tweak| {
            let mut p = point(t, &s, FILTER_TEXT, axis(index.dimension(), 0));
            tweak(&mut p.payload);
            p
        })
        .collect();
    let ids = points.iter().map(|p| p.id).collect();
    index.upsert(t, points).await.unwrap();
    ids
}

fn all_states() -> SearchFilter {
    SearchFilter {
        states: MemoryState::ALL.to_vec(),
        ..SearchFilter::default()
    }
}

pub async fn tenants_are_isolated<F, Fut>(open: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Arc<dyn VectorIndex>>,
{
    let index = open().await;
    let dim = index.dimension();
    assert!(dim >= 8, "the contract needs a dimension of at least 8");
    let (a, b) = (tenant("tenant-a"), tenant("tenant-b"));
    let alice = subject("alice");
    let a1 = point(&a, &alice, "alice drinks espresso", axis(dim, 0));
    let a2 = point(&a, &alice, "alice plays chess", axis(dim, 1));
    let b1 = point(&b, &subject("bob"), "bob rides bikes", axis(dim, 2));
    index
        .upsert(&a, vec![a1.clone(), a2.clone()])
        .await
        .unwrap();
    index.upsert(&b, vec![b1.clone()]).await.unwrap();

    // B searches with A's vector and A's words: only B's point can come back.
    for request in [
        semantic(a1.dense.clone()),
        keyword("alice espresso chess"),
        hybrid(a1.dense.clone(), "alice espresso chess"),
        SearchRequest {
            filter: SearchFilter {
                subject: Some(alice.clone()),
                ..all_states()
            },
            ..hybrid(a1.dense.clone(), "alice espresso")
        },
    ] {
        let found = ids(&search(&*index, &b, request).await);
        assert!(found.iter().all(|id| *id == b1.id), "{found:?}");
    }
    assert_eq!(
        ids(&search(&*index, &a, semantic(a1.dense.clone())).await)[0],
        a1.id
    );
    // The tenant is a filter of the engine query, not a sieve over its
    // results: A's many closer points must not crowd out B's only point.
    let crowd: Vec<Point> = (0..12)
        .map(|n| {
            point(
                &a,
                &alice,
                "espresso again",
                vector(dim, &[(0, 1.0), (n + 1, 0.1)]),
            )
        })
        .collect();
    index.upsert(&a, crowd).await.unwrap();
    for request in [
        semantic(a1.dense.clone()),
        hybrid(a1.dense.clone(), "espresso bikes"),
    ] {
        let request = SearchRequest {
            limit: 5,
            prefetch: 5,
            ..request
        };
        assert_eq!(ids(&search(&*index, &b, request).await), vec![b1.id]);
    }
    index.delete_subject(&a, &alice).await.unwrap();
    index
        .upsert(&a, vec![a1.clone(), a2.clone()])
        .await
        .unwrap();

    assert_eq!(index.count(&a, None).await.unwrap(), 2);
    assert_eq!(index.count(&b, None).await.unwrap(), 1);
    assert_eq!(index.count(&b, Some(&alice)).await.unwrap(), 0);

    // B cannot delete, erase, edit or overwrite A's points.
    index.delete(&b, &[a1.id, a2.id]).await.unwrap();
    assert_eq!(index.delete_subject(&b, &alice).await.unwrap(), 0);
    let mut hijack = payload(&b, &alice);
    hijack.state = MemoryState::Deleted;
    assert!(matches!(
        index.update_payload(&b, &a1.id, hijack).await,
        Err(VectorIndexError::PointNotFound(id)) if id == a1.id
    ));
    let mut overwrite = point(&b, &subject("bob"), "overwritten", axis(dim, 3));
    overwrite.id = a1.id;
    assert!(matches!(
        index.upsert(&b, vec![overwrite]).await,
        Err(VectorIndexError::IdTaken(id)) if id == a1.id
    ));
    // A point naming another tenant is refused, and nothing of its batch is
    // written.
    let smuggled = point(&a, &alice, "smuggled", axis(dim, 4));
    let honest = point(&b, &subject("bob"), "honest", axis(dim, 5));
    assert!(matches!(
        index.upsert(&b, vec![honest.clone(), smuggled]).await,
        Err(VectorIndexError::TenantMismatch { .. })
    ));

    assert_eq!(index.count(&a, None).await.unwrap(), 2);
    assert_eq!(index.count(&a, Some(&alice)).await.unwrap(), 2);
    assert_eq!(index.count(&b, None).await.unwrap(), 1);
    let hits = search(&*index, &a, keyword("espresso")).await;
    assert_eq!(ids(&hits), vec![a1.id]);
    assert_eq!(hits[0].payload, a1.payload);
}

pub async fn finds_by_dense_and_by_keyword<F, Fut>(open: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Arc<dyn VectorIndex>>,
{
    let index = open().await;
    let dim = index.dimension();
    let (t, s) = (tenant("t1"), subject("s1"));
    let coffee = point(&t, &s, "I drink espresso every morning", axis(dim, 0));
    let city = point(&t, &s, "My sister lives in Lisbon", axis(dim, 1));
    let tea = point(&t, &s, "我喜欢喝绿茶", axis(dim, 2));
    let work = point(&t, &s, "他在北京工作，每天骑自行车", axis(dim, 3));
    let near_coffee = point(
        &t,
        &s,
        "tennis on sundays",
        vector(dim, &[(0, 0.8), (4, 0.6)]),
    );
    index
        .upsert(
            &t,
            vec![
                coffee.clone(),
                city.clone(),
                tea.clone(),
                work.clone(),
                near_coffee.clone(),
            ],
        )
        .await
        .unwrap();

    let hits = search(
        &*index,
        &t,
        SearchRequest {
            limit: 2,
            ..semantic(axis(dim, 0))
        },
    )
    .await;
    assert_eq!(ids(&hits), vec![coffee.id, near_coffee.id]);
    assert!((hits[0].score - 1.0).abs() < 1e-4, "{}", hits[0].score);
    assert!(hits[0].score > hits[1].score);
    assert_eq!(hits[0].dense_rank, Some(0));
    assert_eq!(hits[0].dense_score, Some(hits[0].score));
    assert_eq!(hits[0].sparse_rank, None);

    for (query, expected) in [
        ("espresso", coffee.id),
        ("LISBON", city.id),
        // Stemmed as a Qdrant server stems it: "mornings" -> "morn".
        ("mornings", coffee.id),
        ("绿茶", tea.id),
        ("北京", work.id),
        ("自行车", work.id),
    ] {
        let hits = search(&*index, &t, keyword(query)).await;
        assert_eq!(ids(&hits), vec![expected], "keyword {query}");
        assert!(hits[0].score > 0.0);
        assert_eq!(hits[0].sparse_rank, Some(0));
        assert_eq!(hits[0].sparse_score, Some(hits[0].score));
        assert_eq!(hits[0].dense_rank, None);
    }
    // A longer Chinese query is segmented into words, not matched whole.
    let hits = search(&*index, &t, keyword("我每天喝绿茶")).await;
    assert_eq!(hits[0].id, tea.id);
    // Only stopwords: nothing to match, and no error.
    assert!(search(&*index, &t, keyword("the and of")).await.is_empty());
}

pub async fn hybrid_ranks_a_point_matching_both_legs_first<F, Fut>(open: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Arc<dyn VectorIndex>>,
{
    let index = open().await;
    let dim = index.dimension();
    let (t, s) = (tenant("t1"), subject("s1"));
    // Best dense match, no shared word.
    let dense_only = point(&t, &s, "weather report", axis(dim, 0));
    // Best keyword match (the word twice), opposite vector: last in the
    // dense leg.
    let mut keyword_only = point(&t, &s, "espresso espresso", axis(dim, 0));
    keyword_only.dense = keyword_only.dense.iter().map(|x| -x).collect();
    // Second in both legs.
    let both = point(
        &t,
        &s,
        "espresso at noon",
        vector(dim, &[(0, 0.95), (1, 0.31)]),
    );
    let mut points = vec![dense_only.clone(), keyword_only.clone(), both.clone()];
    for n in 2..7 {
        points.push(point(&t, &s, "unrelated filler words", axis(dim, n)));
    }
    index.upsert(&t, points).await.unwrap();

    // Each leg alone puts another point first...
    let dense_first = search(&*index, &t, semantic(axis(dim, 0))).await;
    assert_eq!(dense_first[0].id, dense_only.id);
    let keyword_first = search(&*index, &t, keyword("espresso")).await;
    assert_eq!(ids(&keyword_first), vec![keyword_only.id, both.id]);

    // ...fused, the point in both legs wins, and explains why.
    let request = SearchRequest {
        limit: 3,
        prefetch: 20,
        rrf_k: 60,
        ..hybrid(axis(dim, 0), "espresso")
    };
    let hits = search(&*index, &t, request).await;
    assert_eq!(hits.len(), 3);
    assert_eq!(hits[0].id, both.id);
    assert_eq!(hits[0].dense_rank, Some(1));
    assert_eq!(hits[0].sparse_rank, Some(1));
    assert!(hits[0].dense_score.unwrap() > 0.9);
    assert!(hits[0].sparse_score.unwrap() > 0.0);
    let expected = position_score(1, 60) + position_score(1, 60);
    assert!((hits[0].score - expected).abs() < 1e-6, "{}", hits[0].score);
    assert!(hits.windows(2).all(|w| w[0].score >= w[1].score));
    assert_eq!(hits[1].id, keyword_only.id);
    assert_eq!(hits[2].id, dense_only.id);
    assert_eq!(hits[2].sparse_rank, None);

    // Hybrid with only one input uses that leg.
    let text_only = SearchRequest {
        dense: None,
        ..hybrid(axis(dim, 0), "espresso")
    };
    assert_eq!(
        ids(&search(&*index, &t, text_only).await),
        vec![keyword_only.id, both.id]
    );
}

pub async fn filters_by_subject<F, Fut>(open: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Arc<dyn VectorIndex>>,
{
    let index = open().await;
    let t = tenant("t1");
    let ids = upsert_variants(
        &*index,
        &t,
        vec![
            Box::new(|_| {}),
            Box::new(|p| p.subject = subject("someone-else")),
        ],
    )
    .await;
    assert_filter_in_every_mode(&*index, &t, SearchFilter::default(), &ids).await;
    let filter = SearchFilter {
        subject: Some(subject("s1")),
        ..SearchFilter::default()
    };
    assert_filter_in_every_mode(&*index, &t, filter, &ids[..1]).await;
}

pub async fn filters_by_point_type_memories_by_default<F, Fut>(open: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Arc<dyn VectorIndex>>,
{
    let index = open().await;
    let t = tenant("t1");
    let ids = upsert_variants(
        &*index,
        &t,
        vec![
            Box::new(|_| {}),
            Box::new(|p| p.point_type = crate::PointType::Episode),
        ],
    )
    .await;
    assert_filter_in_every_mode(&*index, &t, SearchFilter::default(), &ids[..1]).await;
    let episodes = SearchFilter {
        types: vec![crate::PointType::Episode],
        ..SearchFilter::default()
    };
    assert_filter_in_every_mode(&*index, &t, episodes, &ids[1..]).await;
    let both = SearchFilter {
        types: vec![crate::PointType::Memory, crate::PointType::Episode],
        ..SearchFilter::default()
    };
    assert_filter_in_every_mode(&*index, &t, both, &ids).await;
    // The type reads back, and a subject's deletion takes its episodes too.
    let hits = search(
        &*index,
        &t,
        SearchRequest {
            filter: SearchFilter {
                types: vec![crate::PointType::Episode],
                ..SearchFilter::default()
            },
            ..keyword(FILTER_TEXT)
        },
    )
    .await;
    assert!(hits
        .iter()
        .all(|h| h.payload.point_type == crate::PointType::Episode));
    assert_eq!(
        index.delete_subject(&t, &subject("s1")).await.unwrap(),
        2,
        "memories and episodes of the subject"
    );
}

pub async fn filters_apply_inside_each_leg<F, Fut>(open: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Arc<dyn VectorIndex>>,
{
    let index = open().await;
    let dim = index.dimension();
    let t = tenant("t1");
    let (wanted, others) = (subject("wanted"), subject("others"));
    let target = point(
        &t,
        &wanted,
        "budget meeting",
        vector(dim, &[(0, 0.6), (1, 0.8)]),
    );
    // Better matches in both legs, all filtered out by subject.
    let mut points: Vec<Point> = (0..10)
        .map(|n| {
            point(
                &t,
                &others,
                "budget budget",
                vector(dim, &[(0, 1.0), (n + 2, 0.05)]),
            )
        })
        .collect();
    points.push(target.clone());
    index.upsert(&t, points).await.unwrap();

    let request = SearchRequest {
        filter: SearchFilter {
            subject: Some(wanted),
            ..SearchFilter::default()
        },
        limit: 3,
        prefetch: 3,
        ..hybrid(axis(dim, 0), "budget")
    };
    let hits = search(&*index, &t, request).await;
    assert_eq!(ids(&hits), vec![target.id]);
    // Top of each leg: both candidate lists were filtered before the cut.
    assert_eq!(hits[0].dense_rank, Some(0));
    assert_eq!(hits[0].sparse_rank, Some(0));
}

pub async fn filters_by_any_of_kinds<F, Fut>(open: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Arc<dyn VectorIndex>>,
{
    let index = open().await;
    let t = tenant("t1");
    let ids = upsert_variants(
        &*index,
        &t,
        vec![
            Box::new(|p| p.kind = MemoryKind::Fact),
            Box::new(|p| p.kind = MemoryKind::Rule),
            Box::new(|p| p.kind = MemoryKind::Preference),
        ],
    )
    .await;
    assert_filter_in_every_mode(&*index, &t, SearchFilter::default(), &ids).await;
    let filter = SearchFilter {
        kinds: vec![MemoryKind::Fact, MemoryKind::Rule],
        ..SearchFilter::default()
    };
    assert_filter_in_every_mode(&*index, &t, filter, &ids[..2]).await;
    let filter = SearchFilter {
        kinds: vec![MemoryKind::Preference],
        ..SearchFilter::default()
    };
    assert_filter_in_every_mode(&*index, &t, filter, &ids[2..]).await;
}

pub async fn filters_by_all_of_tags<F, Fut>(open: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Arc<dyn VectorIndex>>,
{
    let index = open().await;
    let t = tenant("t1");
    let tags = |tags: &'static [&'static str]| -> Tweak {
        Box::new(move |p| p.tags = tags.iter().map(|t| t.to_string()).collect())
    };
    let ids = upsert_variants(
        &*index,
        &t,
        vec![
            tags(&["food", "travel", "family"]),
            tags(&["food"]),
            tags(&["travel"]),
            tags(&[]),
        ],
    )
    .await;
    assert_filter_in_every_mode(&*index, &t, SearchFilter::default(), &ids).await;
    let filter = SearchFilter {
        tags: vec!["food".into(), "travel".into()],
        ..SearchFilter::default()
    };
    assert_filter_in_every_mode(&*index, &t, filter, &ids[..1]).await;
    let filter = SearchFilter {
        tags: vec!["food".into()],
        ..SearchFilter::default()
    };
    assert_filter_in_every_mode(&*index, &t, filter, &ids[..2]).await;
}

pub async fn filters_states_active_only_by_default<F, Fut>(open: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Arc<dyn VectorIndex>>,
{
    let index = open().await;
    let t = tenant("t1");
    let state = |state: MemoryState| -> Tweak { Box::new(move |p| p.state = state) };
    let ids = upsert_variants(
        &*index,
        &t,
        MemoryState::ALL.into_iter().map(state).collect(),
    )
    .await;
    assert_eq!(MemoryState::ALL[0], MemoryState::Active);
    assert_filter_in_every_mode(&*index, &t, SearchFilter::default(), &ids[..1]).await;
    assert_filter_in_every_mode(&*index, &t, all_states(), &ids).await;
    let filter = SearchFilter {
        states: vec![MemoryState::Archived, MemoryState::PendingReview],
        ..SearchFilter::default()
    };
    let position = |s: MemoryState| MemoryState::ALL.iter().position(|x| *x == s).unwrap();
    let expected = [
        ids[position(MemoryState::Archived)],
        ids[position(MemoryState::PendingReview)],
    ];
    assert_filter_in_every_mode(&*index, &t, filter, &expected).await;
}

pub async fn filters_by_session_and_agent<F, Fut>(open: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Arc<dyn VectorIndex>>,
{
    let index = open().await;
    let t = tenant("t1");
    let ids = upsert_variants(
        &*index,
        &t,
        vec![
            Box::new(|p| {
                p.session = Some("sess-1".into());
                p.agent = Some("planner".into());
            }),
            Box::new(|p| {
                p.session = Some("sess-1".into());
                p.agent = Some("coder".into());
            }),
            Box::new(|p| {
                p.session = Some("sess-2".into());
                p.agent = Some("planner".into());
            }),
            Box::new(|_| {}),
        ],
    )
    .await;
    assert_filter_in_every_mode(&*index, &t, SearchFilter::default(), &ids).await;
    let by_session = SearchFilter {
        session: Some("sess-1".into()),
        ..SearchFilter::default()
    };
    assert_filter_in_every_mode(&*index, &t, by_session, &ids[..2]).await;
    let by_agent = SearchFilter {
        agent: Some("planner".into()),
        ..SearchFilter::default()
    };
    assert_filter_in_every_mode(&*index, &t, by_agent, &[ids[0], ids[2]]).await;
    let by_both = SearchFilter {
        session: Some("sess-1".into()),
        agent: Some("planner".into()),
        ..SearchFilter::default()
    };
    assert_filter_in_every_mode(&*index, &t, by_both, &ids[..1]).await;
}

pub async fn filters_by_created_range<F, Fut>(open: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Arc<dyn VectorIndex>>,
{
    let index = open().await;
    let t = tenant("t1");
    let created = |at: i64| -> Tweak { Box::new(move |p| p.created_at = at) };
    let ids = upsert_variants(
        &*index,
        &t,
        vec![
            created(1_000),
            created(2_000),
            created(3_000),
            created(4_000),
        ],
    )
    .await;
    assert_filter_in_every_mode(&*index, &t, SearchFilter::default(), &ids).await;
    // Both bounds are inclusive.
    let between = SearchFilter {
        created_from: Some(2_000),
        created_to: Some(3_000),
        ..SearchFilter::default()
    };
    assert_filter_in_every_mode(&*index, &t, between, &ids[1..3]).await;
    let from = SearchFilter {
        created_from: Some(2_500),
        ..SearchFilter::default()
    };
    assert_filter_in_every_mode(&*index, &t, from, &ids[2..]).await;
    let to = SearchFilter {
        created_to: Some(1_999),
        ..SearchFilter::default()
    };
    assert_filter_in_every_mode(&*index, &t, to, &ids[..1]).await;
}

pub async fn filters_by_min_importance<F, Fut>(open: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Arc<dyn VectorIndex>>,
{
    let index = open().await;
    let t = tenant("t1");
    let importance = |value: f32| -> Tweak { Box::new(move |p| p.importance = value) };
    let ids = upsert_variants(
        &*index,
        &t,
        vec![importance(0.2), importance(0.7), importance(0.95)],
    )
    .await;
    assert_filter_in_every_mode(&*index, &t, SearchFilter::default(), &ids).await;
    // Inclusive, even for a value f32 cannot hold exactly.
    let filter = SearchFilter {
        min_importance: Some(0.7),
        ..SearchFilter::default()
    };
    assert_filter_in_every_mode(&*index, &t, filter, &ids[1..]).await;
}

pub async fn update_payload_changes_state_not_vectors<F, Fut>(open: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Arc<dyn VectorIndex>>,
{
    let index = open().await;
    let dim = index.dimension();
    let (t, s) = (tenant("t1"), subject("s1"));
    let memory = point(
        &t,
        &s,
        "allergic to peanuts",
        vector(dim, &[(0, 0.6), (1, 0.8)]),
    );
    let other = point(&t, &s, "likes hiking", axis(dim, 5));
    index
        .upsert(&t, vec![memory.clone(), other.clone()])
        .await
        .unwrap();

    let mut archived = memory.payload.clone();
    archived.state = MemoryState::Archived;
    archived.importance = 0.9;
    archived.tags = vec!["health".into()];
    archived.updated_at = 1_800_000_000;
    index
        .update_payload(&t, &memory.id, archived.clone())
        .await
        .unwrap();

    // Hidden by default, in every mode...
    let query = memory.dense.clone();
    assert!(!ids(&search(&*index, &t, semantic(query.clone())).await).contains(&memory.id));
    assert!(search(&*index, &t, keyword("peanuts")).await.is_empty());
    assert!(
        !ids(&search(&*index, &t, hybrid(query.clone(), "peanuts")).await).contains(&memory.id)
    );

    // ...found when archived points are asked for, with both vectors intact.
    let archived_only = SearchFilter {
        states: vec![MemoryState::Archived],
        ..SearchFilter::default()
    };
    let hits = search(
        &*index,
        &t,
        SearchRequest {
            filter: archived_only.clone(),
            with_vectors: true,
            ..semantic(query.clone())
        },
    )
    .await;
    assert_eq!(ids(&hits), vec![memory.id]);
    assert!((hits[0].score - 1.0).abs() < 1e-4);
    assert_eq!(hits[0].payload, archived);
    let stored = hits[0].dense.as_ref().unwrap();
    assert!(stored
        .iter()
        .zip(&memory.dense)
        .all(|(a, b)| (a - b).abs() < 1e-5));
    let hits = search(
        &*index,
        &t,
        SearchRequest {
            filter: archived_only,
            ..keyword("peanuts")
        },
    )
    .await;
    assert_eq!(ids(&hits), vec![memory.id]);
    assert_eq!(index.count(&t, None).await.unwrap(), 2);

    // Restored: back in default searches.
    index
        .update_payload(&t, &memory.id, memory.payload.clone())
        .await
        .unwrap();
    let hits = search(&*index, &t, keyword("peanuts")).await;
    assert_eq!(ids(&hits), vec![memory.id]);
    assert_eq!(hits[0].payload, memory.payload);
}

pub async fn update_payload_refuses_missing_points_and_foreign_payloads<F, Fut>(open: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Arc<dyn VectorIndex>>,
{
    let index = open().await;
    let (t, s) = (tenant("t1"), subject("s1"));
    let missing = MemoryId::new();
    assert!(matches!(
        index.update_payload(&t, &missing, payload(&t, &s)).await,
        Err(VectorIndexError::PointNotFound(id)) if id == missing
    ));
    let memory = point(&t, &s, "owns a cat", axis(index.dimension(), 0));
    index.upsert(&t, vec![memory.clone()]).await.unwrap();
    let foreign = payload(&tenant("t2"), &s);
    let error = index
        .update_payload(&t, &memory.id, foreign)
        .await
        .unwrap_err();
    assert_eq!(error.code(), "tenant_mismatch");
    assert_eq!(index.count(&tenant("t2"), None).await.unwrap(), 0);
}

pub async fn deletes_only_the_given_ids<F, Fut>(open: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Arc<dyn VectorIndex>>,
{
    let index = open().await;
    let dim = index.dimension();
    let (t, s) = (tenant("t1"), subject("s1"));
    let gone = point(&t, &s, "moved to Berlin", axis(dim, 0));
    let kept = point(&t, &s, "moved to Berlin last year", axis(dim, 1));
    index
        .upsert(&t, vec![gone.clone(), kept.clone()])
        .await
        .unwrap();
    index.delete(&t, &[gone.id, MemoryId::new()]).await.unwrap();
    index.delete(&t, &[]).await.unwrap();
    assert_eq!(index.count(&t, None).await.unwrap(), 1);
    assert_eq!(
        ids(&search(&*index, &t, keyword("berlin")).await),
        vec![kept.id]
    );
    let hits = search(&*index, &t, semantic(axis(dim, 0))).await;
    assert!(!ids(&hits).contains(&gone.id));
}

pub async fn deletes_a_subject_and_counts_it<F, Fut>(open: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Arc<dyn VectorIndex>>,
{
    let index = open().await;
    let dim = index.dimension();
    let t = tenant("t1");
    let (alice, bob) = (subject("alice"), subject("bob"));
    let mut archived = point(&t, &alice, "old address", axis(dim, 2));
    archived.payload.state = MemoryState::Archived;
    let points = vec![
        point(&t, &alice, "likes jazz", axis(dim, 0)),
        point(&t, &alice, "works nights", axis(dim, 1)),
        archived,
        point(&t, &bob, "likes jazz too", axis(dim, 0)),
    ];
    let bob_id = points[3].id;
    index.upsert(&t, points).await.unwrap();

    assert_eq!(index.delete_subject(&t, &alice).await.unwrap(), 3);
    assert_eq!(index.count(&t, Some(&alice)).await.unwrap(), 0);
    assert_eq!(index.count(&t, Some(&bob)).await.unwrap(), 1);
    assert_eq!(index.delete_subject(&t, &alice).await.unwrap(), 0);
    let hits = search(
        &*index,
        &t,
        SearchRequest {
            filter: all_states(),
            ..hybrid(axis(dim, 0), "jazz address nights")
        },
    )
    .await;
    assert_eq!(ids(&hits), vec![bob_id]);
}

/// A purge (whatever the adapter can do) keeps every live point, in every
/// tenant, searchable, counted and writable, across a reopen; with nothing
/// deleted, and twice in a row, it is harmless.
pub async fn purging_keeps_every_live_point<F, Fut>(open: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Arc<dyn VectorIndex>>,
{
    let index = open().await;
    let dim = index.dimension();
    index
        .purge_deleted()
        .await
        .expect("purge of an empty index");
    let (a, b) = (tenant("t1"), tenant("t2"));
    let (alice, bob) = (subject("alice"), subject("bob"));
    let mut archived = point(&a, &bob, "moved to Ghent", axis(dim, 2));
    archived.payload.state = MemoryState::Archived;
    archived.payload.tags = vec!["address".into()];
    let kept = vec![
        point(&a, &bob, "plays the cello", axis(dim, 0)),
        archived.clone(),
    ];
    let other_tenant = point(&b, &alice, "plays the cello too", axis(dim, 0));
    index.upsert(&a, kept.clone()).await.unwrap();
    index.upsert(&b, vec![other_tenant.clone()]).await.unwrap();
    index
        .upsert(
            &a,
            vec![
                point(&a, &alice, "cello lessons on friday", axis(dim, 0)),
                point(&a, &alice, "allergic to cats", axis(dim, 1)),
            ],
        )
        .await
        .unwrap();
    assert_eq!(index.delete_subject(&a, &alice).await.unwrap(), 2);

    for _ in 0..2 {
        if let crate::Purge::Purged { live_points } = index.purge_deleted().await.unwrap() {
            assert_eq!(live_points, 3, "the live points of every tenant");
        }
        assert_eq!(index.count(&a, Some(&alice)).await.unwrap(), 0);
        assert_eq!(index.count(&a, Some(&bob)).await.unwrap(), 2);
        assert_eq!(index.count(&b, None).await.unwrap(), 1);
    }
    let cello = hybrid(axis(dim, 0), "cello");
    assert_eq!(
        ids(&search(&*index, &a, cello.clone()).await),
        vec![kept[0].id]
    );
    assert_eq!(
        ids(&search(&*index, &b, cello.clone()).await),
        vec![other_tenant.id]
    );
    // Payloads and both vectors came through: filters, BM25 and dense.
    let hits = search(
        &*index,
        &a,
        SearchRequest {
            filter: SearchFilter {
                states: vec![MemoryState::Archived],
                tags: vec!["address".into()],
                ..SearchFilter::default()
            },
            with_vectors: true,
            ..hybrid(axis(dim, 2), "ghent")
        },
    )
    .await;
    assert_eq!(ids(&hits), vec![archived.id]);
    assert_eq!(hits[0].payload, archived.payload);
    assert_eq!(hits[0].dense_rank, Some(0));
    assert_eq!(hits[0].sparse_rank, Some(0));
    assert!(hits[0].dense.as_ref().is_some_and(|d| d.len() == dim));

    // Writes go on after a purge and outlive a reopen.
    let later = point(&a, &bob, "started the viola", axis(dim, 3));
    index.upsert(&a, vec![later.clone()]).await.unwrap();
    index.delete(&a, &[kept[0].id]).await.unwrap();
    index.flush().await.unwrap();
    drop(index);
    let index = open().await;
    assert_eq!(index.count(&a, Some(&bob)).await.unwrap(), 2);
    assert_eq!(
        ids(&search(&*index, &a, keyword("viola")).await),
        vec![later.id]
    );
    assert!(search(&*index, &a, keyword("cello")).await.is_empty());
}

pub async fn upsert_replaces_an_existing_point<F, Fut>(open: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Arc<dyn VectorIndex>>,
{
    let index = open().await;
    let dim = index.dimension();
    let (t, s) = (tenant("t1"), subject("s1"));
    let before = point(&t, &s, "favourite fruit is apple", axis(dim, 0));
    index.upsert(&t, vec![before.clone()]).await.unwrap();
    let mut after = point(&t, &s, "favourite fruit is banana", axis(dim, 1));
    after.id = before.id;
    after.payload.kind = MemoryKind::Preference;
    after.payload.tags = vec!["food".into()];
    index.upsert(&t, vec![after.clone()]).await.unwrap();

    assert_eq!(index.count(&t, None).await.unwrap(), 1);
    assert!(search(&*index, &t, keyword("apple")).await.is_empty());
    let hits = search(&*index, &t, keyword("banana")).await;
    assert_eq!(ids(&hits), vec![before.id]);
    assert_eq!(hits[0].payload, after.payload);
    let hits = search(&*index, &t, semantic(axis(dim, 1))).await;
    assert_eq!(hits[0].id, before.id);
    assert!((hits[0].score - 1.0).abs() < 1e-4);
}

pub async fn survives_a_reopen<F, Fut>(open: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Arc<dyn VectorIndex>>,
{
    let index = open().await;
    let dim = index.dimension();
    let (t, s) = (tenant("t1"), subject("s1"));
    let flushed = point(&t, &s, "speaks Portuguese", axis(dim, 0));
    let mut archived = point(&t, &s, "lived in Porto", axis(dim, 1));
    archived.payload.state = MemoryState::Archived;
    index
        .upsert(&t, vec![flushed.clone(), archived.clone()])
        .await
        .unwrap();
    index.flush().await.unwrap();
    // Written after the flush: a clean close must keep it too.
    let late = point(&t, &s, "learning Japanese", axis(dim, 2));
    index.upsert(&t, vec![late.clone()]).await.unwrap();
    let deleted = point(&t, &s, "temporary note", axis(dim, 3));
    index.upsert(&t, vec![deleted.clone()]).await.unwrap();
    index.delete(&t, &[deleted.id]).await.unwrap();
    drop(index);

    let index = open().await;
    assert_eq!(index.count(&t, None).await.unwrap(), 3);
    assert_eq!(
        ids(&search(&*index, &t, keyword("portuguese")).await),
        vec![flushed.id]
    );
    assert_eq!(
        ids(&search(&*index, &t, keyword("japanese")).await),
        vec![late.id]
    );
    let hits = search(
        &*index,
        &t,
        SearchRequest {
            filter: SearchFilter {
                states: vec![MemoryState::Archived],
                ..SearchFilter::default()
            },
            ..semantic(axis(dim, 1))
        },
    )
    .await;
    assert_eq!(ids(&hits), vec![archived.id]);
    assert_eq!(hits[0].payload, archived.payload);
    assert!(search(&*index, &t, keyword("temporary")).await.is_empty());
    // Still writable after the reopen.
    let more = point(&t, &s, "plays violin", axis(dim, 4));
    index.upsert(&t, vec![more.clone()]).await.unwrap();
    assert_eq!(
        ids(&search(&*index, &t, keyword("violin")).await),
        vec![more.id]
    );
}

pub async fn returns_dense_vectors_on_request<F, Fut>(open: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Arc<dyn VectorIndex>>,
{
    let index = open().await;
    let dim = index.dimension();
    let (t, s) = (tenant("t1"), subject("s1"));
    let memory = point(
        &t,
        &s,
        "runs marathons",
        vector(dim, &[(0, 0.3), (2, 0.4), (7, 0.5)]),
    );
    index.upsert(&t, vec![memory.clone()]).await.unwrap();
    for request in [
        semantic(memory.dense.clone()),
        keyword("marathons"),
        hybrid(memory.dense.clone(), "marathons"),
    ] {
        let mode = request.mode;
        let without = search(&*index, &t, request.clone()).await;
        assert_eq!(ids(&without), vec![memory.id], "{mode:?}");
        assert!(without[0].dense.is_none(), "{mode:?}");
        let with = search(
            &*index,
            &t,
            SearchRequest {
                with_vectors: true,
                ..request
            },
        )
        .await;
        let dense = with[0].dense.as_ref().expect("dense vector");
        assert_eq!(dense.len(), dim);
        assert!(
            dense
                .iter()
                .zip(&memory.dense)
                .all(|(a, b)| (a - b).abs() < 1e-5),
            "{mode:?}"
        );
    }
}

pub async fn nearest_gives_the_semantic_searchs_ids_and_similarities<F, Fut>(open: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Arc<dyn VectorIndex>>,
{
    let index = open().await;
    let dim = index.dimension();
    let (a, b) = (tenant("tenant-a"), tenant("tenant-b"));
    let (alice, carol) = (subject("alice"), subject("carol"));
    let coffee = point(&a, &alice, "espresso", axis(dim, 0));
    let near_coffee = point(&a, &alice, "ristretto", vector(dim, &[(0, 1.0), (1, 0.4)]));
    let chess = point(&a, &alice, "chess", axis(dim, 1));
    let mut archived = point(&a, &alice, "old espresso", axis(dim, 0));
    archived.payload.state = MemoryState::Archived;
    let mut episode = point(&a, &alice, "said espresso", axis(dim, 0));
    episode.payload.point_type = crate::PointType::Episode;
    let carols = point(&a, &carol, "carol's espresso", axis(dim, 0));
    index
        .upsert(
            &a,
            vec![
                coffee.clone(),
                near_coffee.clone(),
                chess.clone(),
                archived.clone(),
                episode.clone(),
                carols.clone(),
            ],
        )
        .await
        .unwrap();
    // Another tenant's point on the very query: never among A's neighbours.
    let bobs = point(&b, &subject("alice"), "bob's espresso", axis(dim, 0));
    index.upsert(&b, vec![bobs.clone()]).await.unwrap();

    let filter = SearchFilter {
        subject: Some(alice.clone()),
        ..SearchFilter::default()
    };
    let queries = vec![axis(dim, 0), axis(dim, 1)];
    let nearest = index.nearest(&a, &filter, &queries, 2).await.unwrap();
    assert_eq!(nearest.len(), 2);
    for (query, found) in queries.iter().zip(&nearest) {
        let request = SearchRequest {
            filter: filter.clone(),
            limit: 2,
            ..semantic(query.clone())
        };
        let hits = search(&*index, &a, request).await;
        assert_eq!(hits.len(), 2);
        let expected: Vec<(MemoryId, f32)> = hits
            .iter()
            .map(|hit| (hit.id, hit.dense_score.unwrap()))
            .collect();
        assert_eq!(
            found.iter().map(|(id, _)| *id).collect::<Vec<_>>(),
            ids(&hits)
        );
        for ((_, similarity), (_, score)) in found.iter().zip(&expected) {
            assert!((similarity - score).abs() < 1e-5, "{found:?} {expected:?}");
        }
    }
    // Active memories of alice only, best first: the archived point, the
    // episode, carol's and B's share the first query's vector and are left out.
    assert_eq!(nearest[0][0].0, coffee.id);
    assert_eq!(nearest[0][1].0, near_coffee.id);
    assert!((nearest[0][0].1 - 1.0).abs() < 1e-5, "{:?}", nearest[0]);
    assert_eq!(nearest[1][0].0, chess.id);
    let left_out = [archived.id, episode.id, carols.id, bobs.id];
    assert!(nearest
        .iter()
        .flatten()
        .all(|(id, _)| !left_out.contains(id)));
    // B asks with A's subject name: its own point only.
    let theirs = index.nearest(&b, &filter, &queries[..1], 5).await.unwrap();
    assert_eq!(
        theirs[0].iter().map(|(id, _)| *id).collect::<Vec<_>>(),
        vec![bobs.id]
    );

    assert!(index.nearest(&a, &filter, &[], 2).await.unwrap().is_empty());
    assert_eq!(
        index.nearest(&a, &filter, &queries, 0).await.unwrap(),
        vec![Vec::new(), Vec::new()]
    );
    assert!(matches!(
        index.nearest(&a, &filter, &[vec![1.0; dim + 1]], 2).await,
        Err(VectorIndexError::DimensionMismatch { .. })
    ));
}

pub async fn counts_per_tenant_and_subject<F, Fut>(open: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Arc<dyn VectorIndex>>,
{
    let index = open().await;
    let dim = index.dimension();
    let (t1, t2) = (tenant("t1"), tenant("t2"));
    let (alice, bob) = (subject("alice"), subject("bob"));
    assert_eq!(index.count(&t1, None).await.unwrap(), 0);
    let mut archived = point(&t1, &alice, "c", axis(dim, 2));
    archived.payload.state = MemoryState::Archived;
    index
        .upsert(
            &t1,
            vec![
                point(&t1, &alice, "a", axis(dim, 0)),
                point(&t1, &alice, "b", axis(dim, 1)),
                archived,
                point(&t1, &bob, "d", axis(dim, 3)),
            ],
        )
        .await
        .unwrap();
    index
        .upsert(&t2, vec![point(&t2, &alice, "e", axis(dim, 4))])
        .await
        .unwrap();
    // Every state counts.
    assert_eq!(index.count(&t1, None).await.unwrap(), 4);
    assert_eq!(index.count(&t1, Some(&alice)).await.unwrap(), 3);
    assert_eq!(index.count(&t1, Some(&bob)).await.unwrap(), 1);
    assert_eq!(index.count(&t2, None).await.unwrap(), 1);
    assert_eq!(index.count(&t2, Some(&alice)).await.unwrap(), 1);
    assert_eq!(index.count(&t2, Some(&bob)).await.unwrap(), 0);
}

pub async fn refuses_malformed_input<F, Fut>(open: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = Arc<dyn VectorIndex>>,
{
    let index = open().await;
    let dim = index.dimension();
    let (t, s) = (tenant("t1"), subject("s1"));
    let short = point(&t, &s, "short vector", vec![1.0; dim - 1]);
    let error = index.upsert(&t, vec![short]).await.unwrap_err();
    assert_eq!(error.code(), "dimension_mismatch", "{error}");
    let mut not_a_number = point(&t, &s, "nan", axis(dim, 0));
    not_a_number.dense[1] = f32::NAN;
    let error = index.upsert(&t, vec![not_a_number]).await.unwrap_err();
    assert_eq!(error.code(), "invalid_point", "{error}");
    assert_eq!(index.count(&t, None).await.unwrap(), 0);

    let invalid = |request: SearchRequest| {
        let index = index.clone();
        let t = t.clone();
        async move { index.search(&t, &request).await.unwrap_err().code() }
    };
    let no_dense = SearchRequest {
        dense: None,
        ..semantic(axis(dim, 0))
    };
    assert_eq!(invalid(no_dense).await, "invalid_search_request");
    let no_text = SearchRequest {
        text: None,
        ..keyword("x")
    };
    assert_eq!(invalid(no_text).await, "invalid_search_request");
    let nothing = SearchRequest {
        dense: None,
        text: None,
        ..hybrid(axis(dim, 0), "x")
    };
    assert_eq!(invalid(nothing).await, "invalid_search_request");
    let zero_k = SearchRequest {
        rrf_k: 0,
        ..hybrid(axis(dim, 0), "x")
    };
    assert_eq!(invalid(zero_k).await, "invalid_search_request");
    assert_eq!(
        invalid(semantic(vec![1.0; dim + 1])).await,
        "dimension_mismatch"
    );
    let zero_limit = SearchRequest {
        limit: 0,
        ..semantic(axis(dim, 0))
    };
    assert!(index.search(&t, &zero_limit).await.unwrap().is_empty());
}

/// Says that a case did not run, where a test run shows it: written to the
/// process's stderr directly, because the test harness swallows `eprintln!`
/// of passing tests. The reason is printed once per test binary.
pub fn report_skip(case: &str, reason: &str) {
    use std::io::Write;
    static REASON: std::sync::Once = std::sync::Once::new();
    let mut stderr = std::io::stderr();
    REASON.call_once(|| {
        let _ = writeln!(stderr, "skipped: {reason}");
    });
    let _ = writeln!(stderr, "skipped {case}");
}

/// One test per contract case for an adapter. `setup` is awaited once per
/// test and its value shared (e.g. a temporary directory); `open` maps it to
/// a fresh instance over the same storage.
///
/// With `run_if: <expr returning Result<(), String>>`, each test first
/// evaluates it and, on `Err(reason)`, reports the skip ([`report_skip`])
/// and passes without running: for adapters that need an external server.
#[macro_export]
macro_rules! vector_index_contract_tests {
    (setup: $setup:expr, open: $open:expr) => {
        $crate::vector_index_contract_tests!(
            setup: $setup, open: $open, run_if: ::std::result::Result::<(), ::std::string::String>::Ok(())
        );
    };
    (setup: $setup:expr, open: $open:expr, run_if: $run_if:expr) => {
        $crate::vector_index_contract_tests!(@cases $setup, $open, $run_if;
            tenants_are_isolated,
            finds_by_dense_and_by_keyword,
            hybrid_ranks_a_point_matching_both_legs_first,
            filters_by_subject,
            filters_by_point_type_memories_by_default,
            filters_apply_inside_each_leg,
            filters_by_any_of_kinds,
            filters_by_all_of_tags,
            filters_states_active_only_by_default,
            filters_by_session_and_agent,
            filters_by_created_range,
            filters_by_min_importance,
            update_payload_changes_state_not_vectors,
            update_payload_refuses_missing_points_and_foreign_payloads,
            deletes_only_the_given_ids,
            deletes_a_subject_and_counts_it,
            purging_keeps_every_live_point,
            upsert_replaces_an_existing_point,
            survives_a_reopen,
            returns_dense_vectors_on_request,
            nearest_gives_the_semantic_searchs_ids_and_similarities,
            counts_per_tenant_and_subject,
            refuses_malformed_input,
        );
    };
    (@cases $setup:expr, $open:expr, $run_if:expr; $($case:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $case() {
                if let ::std::result::Result::Err(reason) = $run_if {
                    $crate::testsuite::report_skip(stringify!($case), &reason);
                    return;
                }
                let state = std::sync::Arc::new($setup.await);
                let open = $open;
                $crate::testsuite::$case(|| open(state.clone())).await;
            }
        )*
    };
}
