//! The built-in lexical embedder.

use mnemo_embed::{Embedder, LexicalEmbedder};

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

async fn embed(embedder: &LexicalEmbedder, texts: &[&str]) -> Vec<Vec<f32>> {
    let texts: Vec<String> = texts.iter().map(|t| t.to_string()).collect();
    embedder.embed(&texts).await.unwrap()
}

#[tokio::test]
async fn space_is_honest_about_being_lexical() {
    let embedder = LexicalEmbedder::new(256);
    assert_eq!(embedder.space().model, "mnemo/lexical-hash-v1");
    assert_eq!(embedder.space().dimension, 256);
    assert_eq!(
        embedder.space().collection_name(),
        "mnemo_lexical-hash-v1__256"
    );
}

#[tokio::test]
async fn vectors_are_deterministic_and_normalised() {
    let first = LexicalEmbedder::new(384);
    let second = LexicalEmbedder::new(384);
    let texts = [
        "I am allergic to peanuts.",
        "我喜欢吃辣，尤其是川菜。",
        "",
        "ok thanks",
    ];
    let a = embed(&first, &texts).await;
    let b = embed(&second, &texts).await;
    assert_eq!(a, b, "same text, same vector, bit for bit");
    for vector in &a {
        assert_eq!(vector.len(), 384);
        let norm = cosine(vector, vector).sqrt();
        assert!((norm - 1.0).abs() < 1e-5, "norm {norm}");
    }
}

#[tokio::test]
async fn similar_texts_are_closer_than_unrelated_ones() {
    let embedder = LexicalEmbedder::new(512);
    let v = embed(
        &embedder,
        &[
            "The user lives in Lisbon.",
            "User lives in Lisbon, Portugal",
            "I am allergic to peanuts.",
            "allergy: peanuts",
            "We decided to book the flight to Barcelona.",
        ],
    )
    .await;
    let lisbon = cosine(&v[0], &v[1]);
    let peanuts = cosine(&v[2], &v[3]);
    for (related, label) in [(lisbon, "lisbon"), (peanuts, "peanuts")] {
        for unrelated in [
            cosine(&v[0], &v[2]),
            cosine(&v[0], &v[4]),
            cosine(&v[1], &v[3]),
            cosine(&v[2], &v[4]),
        ] {
            assert!(
                related > unrelated + 0.2,
                "{label}: related {related} vs unrelated {unrelated}"
            );
        }
    }
    // Trigrams give partial credit across inflections ("allergic"/"allergy").
    assert!(peanuts > 0.3, "{peanuts}");
}

#[tokio::test]
async fn cjk_is_split_into_characters_and_bigrams() {
    let embedder = LexicalEmbedder::new(512);
    let v = embed(
        &embedder,
        &[
            "用户住在北京。",
            "他住在北京",
            "我喜欢吃辣，尤其是川菜。",
            "北",
        ],
    )
    .await;
    // Without spaces, whole-sentence tokens would share nothing: the
    // shared bigrams 住在/在北/北京 must make these two close.
    let same_city = cosine(&v[0], &v[1]);
    let unrelated = cosine(&v[0], &v[2]);
    assert!(same_city > 0.5, "{same_city}");
    assert!(unrelated < 0.2, "{unrelated}");
    // A single character still shares its unigram.
    assert!(cosine(&v[0], &v[3]) > 0.1);
}

#[tokio::test]
async fn large_inputs_take_the_blocking_path_with_the_same_result() {
    let embedder = LexicalEmbedder::new(128);
    let long = "memories about lisbon and peanuts ".repeat(1000);
    let texts = vec![long.clone(), "short".to_string()];
    let vectors = embedder.embed(&texts).await.unwrap();
    assert_eq!(vectors[0], embedder.embed_one(&long));
    assert_eq!(vectors[1], embedder.embed_one("short"));
}
