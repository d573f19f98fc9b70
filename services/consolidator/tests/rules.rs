//! The rule strategy through its port: noise, kinds, provenance, confidence,
//! merge decisions, determinism, and a held-out labelled set (different
//! wording from the dev set) to check the patterns were not tuned to it.

use chrono::{TimeZone, Utc};
use mnemo_consolidator::rules::RuleStrategy;
use mnemo_consolidator::strategy::{
    Candidate, ConsolidationStrategy, ConversationMessage, ExistingMemory, MergeAction, Spend,
};
use mnemo_domain::events::Role;
use mnemo_domain::{EventId, MemoryId, MemoryKind};

fn message(role: Role, content: &str) -> ConversationMessage {
    ConversationMessage {
        event_id: EventId::new(),
        role,
        content: content.to_owned(),
        timestamp: Utc.with_ymd_and_hms(2025, 6, 1, 12, 0, 0).unwrap(),
        session: Some("s1".to_owned()),
    }
}

async fn extract(text: &str) -> Vec<Candidate> {
    RuleStrategy::new()
        .extract(&[message(Role::User, text)], &Spend::default())
        .await
        .expect("rules never fail")
}

fn existing(content: &str, kind: MemoryKind, similarity: f32) -> ExistingMemory {
    ExistingMemory {
        id: MemoryId::new(),
        content: content.to_owned(),
        kind,
        importance: 0.7,
        similarity,
    }
}

fn candidate(content: &str, kind: MemoryKind) -> Candidate {
    Candidate {
        content: content.to_owned(),
        kind,
        tags: vec![],
        confidence: 0.8,
        source_event_ids: vec![EventId::new()],
    }
}

// --- Noise ------------------------------------------------------------------

#[tokio::test]
async fn english_noise_produces_nothing() {
    let noise = [
        "hi",
        "ok thanks",
        "Hello there, good morning!",
        "lol that's hilarious",
        "Thank you so much, bye!",
        // Questions are not statements.
        "Do you live in Paris?",
        "Can you recommend a restaurant in Lisbon?",
        // Look like patterns, but are small talk.
        "I love you!",
        "I like that, thanks",
        "I have a quick question",
        "I'm a bit tired",
        "My day was great",
        // A one-off experience is not a durable fact.
        "I really enjoyed the concert last night",
        "I'm going to grab a coffee",
    ];
    for text in noise {
        assert_eq!(extract(text).await, vec![], "{text:?} must produce nothing");
    }
}

#[tokio::test]
async fn chinese_noise_produces_nothing() {
    let noise = [
        "你好",
        "哈哈哈太好笑了",
        "今天天气不错",
        "我今天去公园玩得很开心",
        "路上看到一只可爱的流浪猫",
        "好的，谢谢！",
        "你喜欢吃什么？",
        // Look like patterns, but are small talk or one-off.
        "我爱你",
        "我喜欢这个",
        "我今天在公司工作到很晚",
        "我是说我们可以晚点再聊",
        "我有个问题",
        "我正在吃饭",
    ];
    for text in noise {
        assert_eq!(extract(text).await, vec![], "{text:?} must produce nothing");
    }
}

// --- Kinds --------------------------------------------------------------------

#[tokio::test]
async fn each_pattern_family_produces_its_kind() {
    use MemoryKind::*;
    let cases = [
        // Preferences.
        ("I love green tea", Preference),
        ("I prefer aisle seats", Preference),
        ("I can't stand loud music", Preference),
        ("I don't like horror movies", Preference),
        ("My favourite colour is teal", Preference),
        ("我喜欢爬山", Preference),
        ("我爱吃火锅", Preference),
        ("我讨厌排队", Preference),
        ("我不吃香菜", Preference),
        // Facts.
        ("I live in Berlin", Fact),
        ("I work at a bakery", Fact),
        ("I work as a pilot", Fact),
        ("My name is [PERSON]", Fact),
        ("I'm allergic to penicillin", Fact),
        ("I have a golden retriever", Fact),
        ("我住在成都", Fact),
        ("我是一名律师", Fact),
        ("我在医院工作", Fact),
        ("我对青霉素过敏", Fact),
        // Decisions.
        ("We decided to sell the car", Decision),
        ("Let's go with the second option", Decision),
        ("I've decided to learn piano", Decision),
        ("我们决定下个月装修", Decision),
        ("就用蓝色的那版吧", Decision),
        // Plans and status.
        ("I'm planning to visit Japan in April", Status),
        ("I'm going to learn Rust this year", Status),
        ("I'm currently between jobs", Status),
        ("我打算明年考研", Status),
        ("我正在学吉他", Status),
        // Rules.
        ("From now on, always answer in Spanish", Rule),
        ("Never use emoji in your replies", Rule),
        ("Don't call me sir anymore", Rule),
        ("以后别发语音给我", Rule),
        ("以后都用简体中文回答", Rule),
        ("不要再提醒我喝水了", Rule),
    ];
    for (text, kind) in cases {
        let found = extract(text).await;
        assert_eq!(found.len(), 1, "{text:?} gave {found:?}");
        assert_eq!(found[0].kind, kind, "{text:?} gave {found:?}");
        let tags = &found[0].tags;
        assert!(
            (1..=3).contains(&tags.len()) && tags.iter().all(|t| *t == t.to_lowercase()),
            "{text:?}: tags {tags:?}"
        );
    }
}

#[tokio::test]
async fn a_lead_in_joins_the_rule_it_introduces() {
    let found = extract("From now on, please reply in English.").await;
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].kind, MemoryKind::Rule);
    assert_eq!(found[0].content, "From now on, please reply in English");
}

// --- Roles and provenance ---------------------------------------------------

#[tokio::test]
async fn only_user_messages_are_mined() {
    let strategy = RuleStrategy::new();
    for role in [Role::Assistant, Role::System, Role::Tool] {
        let messages = [
            message(role, "I live in Paris and I love green tea."),
            message(role, "我住在北京，我喜欢吃辣。"),
        ];
        assert_eq!(
            strategy
                .extract(&messages, &Spend::default())
                .await
                .unwrap(),
            vec![]
        );
    }
    // The same words from the user are mined.
    let user = [message(Role::User, "I live in Paris and I love green tea.")];
    assert_eq!(
        strategy
            .extract(&user, &Spend::default())
            .await
            .unwrap()
            .len(),
        2
    );
}

#[tokio::test]
async fn two_facts_in_one_message_give_two_candidates_with_its_event_id() {
    let strategy = RuleStrategy::new();
    for text in [
        "I live in Lisbon and I work as a nurse.",
        "I live in Lisbon and work as a nurse.",
        "I live in Lisbon. I work as a nurse.",
        "我住在里斯本，我是一名护士。",
    ] {
        let sent = message(Role::User, text);
        let found = strategy
            .extract(std::slice::from_ref(&sent), &Spend::default())
            .await
            .unwrap();
        assert_eq!(found.len(), 2, "{text:?} gave {found:?}");
        for candidate in &found {
            assert_eq!(candidate.kind, MemoryKind::Fact);
            assert_eq!(candidate.source_event_ids, vec![sent.event_id]);
        }
        assert_ne!(found[0].content, found[1].content);
    }
}

#[tokio::test]
async fn a_repeated_statement_is_one_candidate_citing_both_messages() {
    let first = message(Role::User, "I love green tea.");
    let second = message(Role::User, "Oh, I really love green tea!");
    let found = RuleStrategy::new()
        .extract(&[first.clone(), second.clone()], &Spend::default())
        .await
        .unwrap();
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(
        found[0].source_event_ids,
        vec![first.event_id, second.event_id]
    );
}

// --- Confidence -------------------------------------------------------------

async fn confidence(text: &str) -> f32 {
    let found = extract(text).await;
    assert_eq!(found.len(), 1, "{text:?} gave {found:?}");
    found[0].confidence
}

#[tokio::test]
async fn explicit_statements_are_more_confident_than_hedged_ones() {
    let pairs = [
        ("I love jazz", "I think I kind of like jazz"),
        ("I live in Oslo", "I think I live in Oslo"),
        (
            "From now on always answer in German",
            "Maybe answer in German",
        ),
        (
            "I'm planning to move to Rome",
            "I think I might move to Rome",
        ),
        ("我对花生过敏", "我好像对花生过敏"),
        ("我喜欢爵士乐", "我可能喜欢爵士乐"),
    ];
    for (explicit, hedged) in pairs {
        let (strong, weak) = (confidence(explicit).await, confidence(hedged).await);
        assert!(strong > weak, "{explicit:?} {strong} vs {hedged:?} {weak}");
        assert!((0.0..=1.0).contains(&weak));
    }
    // The brief's anchors: an explicit standing rule ~0.9, "I love X" ~0.85.
    assert!(confidence("From now on, always answer in German").await >= 0.9);
    assert!((confidence("I love jazz").await - 0.85).abs() < 1e-6);
}

#[tokio::test]
async fn negations_keep_their_meaning() {
    let found = extract("I don't like olives").await;
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].kind, MemoryKind::Preference);
    assert!(found[0].content.contains("don't like olives"));
    let found = extract("我不喜欢榴莲").await;
    assert_eq!(found[0].kind, MemoryKind::Preference);
    assert!(found[0].content.contains("不喜欢"));
}

// --- Merge ------------------------------------------------------------------

#[tokio::test]
async fn merge_skips_duplicates_supersedes_slots_and_keeps_the_rest() {
    let strategy = RuleStrategy::new();
    let duplicate = existing("I really love green tea.", MemoryKind::Preference, 0.97);
    let lyon = existing("I live in Lyon", MemoryKind::Fact, 0.81);
    let hangzhou = existing("我住在杭州", MemoryKind::Fact, 0.8);
    let unrelated = existing("I work as a nurse", MemoryKind::Fact, 0.4);
    let candidates = [
        candidate("I love green tea", MemoryKind::Preference),
        candidate("I live in Paris", MemoryKind::Fact),
        candidate("我住在上海浦东", MemoryKind::Fact),
        candidate("I have a golden retriever", MemoryKind::Fact),
        candidate("I live in Paris", MemoryKind::Fact),
    ];
    let lists = vec![
        vec![duplicate.clone(), unrelated.clone()],
        vec![unrelated.clone(), lyon.clone()],
        vec![hangzhou.clone()],
        vec![unrelated.clone(), duplicate.clone()],
        vec![],
    ];
    let outcome = strategy
        .merge(&candidates, &lists, true, &Spend::default())
        .await
        .unwrap();
    assert!(outcome.relations.is_empty(), "the rules relate nothing");
    let decisions = outcome.decisions;
    let actions: Vec<MergeAction> = decisions.iter().map(|d| d.action.clone()).collect();
    assert_eq!(
        actions,
        vec![
            MergeAction::Skip,
            MergeAction::Supersede { target: lyon.id },
            MergeAction::Supersede {
                target: hangzhou.id
            },
            MergeAction::Keep,
            MergeAction::Keep,
        ]
    );
    for (index, decision) in decisions.iter().enumerate() {
        assert_eq!(decision.candidate, index);
        assert!(!decision.reason.is_empty());
    }
}

#[tokio::test]
async fn merge_supersedes_only_where_it_is_certain() {
    let strategy = RuleStrategy::new();
    let cases = [
        // A past or negated statement is not the same slot.
        (
            "I live in Paris",
            "I used to live in Lyon",
            MergeAction::Keep,
        ),
        ("I live in Paris", "I don't live in Lyon", MergeAction::Keep),
        // Someone else's slot.
        (
            "I live in Paris",
            "My sister lives in Lyon",
            MergeAction::Keep,
        ),
        // Negation is not a duplicate.
        ("I don't like coffee", "I like coffee", MergeAction::Keep),
        // The existing memory already says it more precisely.
        (
            "I live in Paris",
            "I live in Paris with my partner",
            MergeAction::Skip,
        ),
        // Third-person wording of the same statement.
        (
            "I love green tea",
            "User loves green tea",
            MergeAction::Skip,
        ),
    ];
    for (new, old, expected) in cases {
        let kind = MemoryKind::Fact;
        let decisions = strategy
            .merge(
                &[candidate(new, kind)],
                &[vec![existing(old, kind, 0.9)]],
                false,
                &Spend::default(),
            )
            .await
            .unwrap()
            .decisions;
        assert_eq!(decisions[0].action, expected, "{new:?} against {old:?}");
    }
}

#[tokio::test]
async fn merge_answers_every_candidate_even_without_its_list() {
    let decisions = RuleStrategy::new()
        .merge(
            &[
                candidate("I love tea", MemoryKind::Preference),
                candidate("I live in Rome", MemoryKind::Fact),
            ],
            &[],
            false,
            &Spend::default(),
        )
        .await
        .unwrap()
        .decisions;
    assert_eq!(decisions.len(), 2);
    assert!(decisions.iter().all(|d| d.action == MergeAction::Keep));
}

// --- Determinism and identity ---------------------------------------------

#[tokio::test]
async fn extraction_is_deterministic() {
    let strategy = RuleStrategy::new();
    let messages: Vec<ConversationMessage> = HELD_OUT
        .iter()
        .flat_map(|batch| batch.iter())
        .map(|(text, _, _)| message(Role::User, text))
        .collect();
    let first = strategy
        .extract(&messages, &Spend::default())
        .await
        .unwrap();
    let second = RuleStrategy::new()
        .extract(&messages, &Spend::default())
        .await
        .unwrap();
    assert_eq!(first, second);
    assert!(!first.is_empty());
}

#[test]
fn the_strategy_names_itself() {
    let strategy = RuleStrategy::new();
    assert_eq!(ConsolidationStrategy::name(&strategy), "rules");
    assert_eq!(ConsolidationStrategy::version(&strategy), "1");
}

// --- Held-out set -------------------------------------------------------------

type Expected = &'static [(MemoryKind, &'static [&'static str])];

/// Held-out lines: (text, lang, expected memories as (kind, words the
/// content must contain)), written apart from the dev set with different
/// wording. Batch A was written first and scored as it stood.
const HELD_OUT_A: &[(&str, &str, Expected)] = {
    use MemoryKind::*;
    &[
        // English noise.
        ("Good morning!", "en", &[]),
        ("haha nice one", "en", &[]),
        ("Can you recommend a good restaurant nearby?", "en", &[]),
        (
            "Yesterday I went to the beach and it was lovely.",
            "en",
            &[],
        ),
        ("Ok cool, thank you so much!", "en", &[]),
        ("What time is it in Tokyo?", "en", &[]),
        ("The weather is gorgeous today.", "en", &[]),
        ("Sounds good to me.", "en", &[]),
        ("I saw a funny dog on my way home.", "en", &[]),
        ("Hmm, not sure yet.", "en", &[]),
        // English memories.
        ("I'm based in Toronto.", "en", &[(Fact, &["Toronto"])]),
        (
            "My wife and I adore Italian opera.",
            "en",
            &[(Preference, &["opera"])],
        ),
        (
            "I can't stand cilantro.",
            "en",
            &[(Preference, &["cilantro"])],
        ),
        (
            "I'm a software engineer at a small startup.",
            "en",
            &[(Fact, &["software engineer"])],
        ),
        (
            "We've decided to rent instead of buying.",
            "en",
            &[(Decision, &["rent"])],
        ),
        (
            "Let's go with the blue logo.",
            "en",
            &[(Decision, &["blue logo"])],
        ),
        (
            "From now on, answer me in French.",
            "en",
            &[(Rule, &["French"])],
        ),
        ("Don't send me emoji anymore.", "en", &[(Rule, &["emoji"])]),
        (
            "I'm planning to run a marathon next spring.",
            "en",
            &[(Status, &["marathon"])],
        ),
        (
            "I'm currently training for a triathlon.",
            "en",
            &[(Status, &["triathlon"])],
        ),
        (
            "I'm allergic to shellfish and I have a cat named Miso.",
            "en",
            &[(Fact, &["shellfish"]), (Fact, &["cat"])],
        ),
        (
            "My favorite band is Radiohead.",
            "en",
            &[(Preference, &["Radiohead"])],
        ),
        (
            "I don't drink alcohol.",
            "en",
            &[(Preference, &["alcohol"])],
        ),
        (
            "Always give me the short version first.",
            "en",
            &[(Rule, &["short version"])],
        ),
        (
            "I think I might switch to a standing desk.",
            "en",
            &[(Status, &["standing desk"])],
        ),
        ("My son is nine years old.", "en", &[(Fact, &["son"])]),
        (
            "I speak Portuguese and a bit of German.",
            "en",
            &[(Fact, &["Portuguese"])],
        ),
        (
            "I prefer tea over coffee in the evening.",
            "en",
            &[(Preference, &["tea"])],
        ),
        (
            "We went with the cheaper insurance plan.",
            "en",
            &[(Decision, &["insurance"])],
        ),
        (
            "My name is [PERSON] and I grew up in Manila.",
            "en",
            &[(Fact, &["name"]), (Fact, &["Manila"])],
        ),
        ("I drive a hybrid Toyota.", "en", &[(Fact, &["Toyota"])]),
        (
            "Please stop suggesting recipes with pork.",
            "en",
            &[(Rule, &["pork"])],
        ),
        // Chinese noise.
        ("早上好！", "zh", &[]),
        ("嗯嗯，知道了", "zh", &[]),
        ("今天好累啊，不想动", "zh", &[]),
        ("你觉得这部电影怎么样？", "zh", &[]),
        ("刚才下了一场大雨", "zh", &[]),
        ("哈哈，你太逗了", "zh", &[]),
        ("谢谢你的建议！", "zh", &[]),
        ("周末和朋友去爬山了，风景很美", "zh", &[]),
        ("我刚吃完午饭", "zh", &[]),
        ("这家店的咖啡还不错", "zh", &[]),
        // Chinese memories.
        ("我在上海一家银行上班", "zh", &[(Fact, &["上海"])]),
        ("我老家是湖南长沙的", "zh", &[(Fact, &["长沙"])]),
        ("我特别爱喝奶茶", "zh", &[(Preference, &["奶茶"])]),
        ("我受不了香菜的味道", "zh", &[(Preference, &["香菜"])]),
        ("我不吃猪肉", "zh", &[(Preference, &["猪肉"])]),
        ("我是一名高中数学老师", "zh", &[(Fact, &["老师"])]),
        ("我们商量后决定明年买房", "zh", &[(Decision, &["买房"])]),
        ("那就用 PostgreSQL 吧", "zh", &[(Decision, &["PostgreSQL"])]),
        ("以后回答都用中文", "zh", &[(Rule, &["中文"])]),
        ("不要再给我推荐恐怖片了", "zh", &[(Rule, &["恐怖片"])]),
        ("我打算下个月去考驾照", "zh", &[(Status, &["驾照"])]),
        ("我正在学日语，准备去日本留学", "zh", &[(Status, &["日语"])]),
        (
            "我对猫毛过敏，而且我养了一只狗",
            "zh",
            &[(Fact, &["猫毛"]), (Fact, &["狗"])],
        ),
        (
            "我最喜欢的作家是村上春树",
            "zh",
            &[(Preference, &["村上春树"])],
        ),
        ("我儿子今年上初二", "zh", &[(Fact, &["儿子"])]),
        ("我可能会换工作", "zh", &[(Status, &["换工作"])]),
        ("以后别叫我全名", "zh", &[(Rule, &["全名"])]),
        (
            "我有两个孩子，一个八岁一个五岁",
            "zh",
            &[(Fact, &["两个孩子"])],
        ),
        ("我习惯用 Mac 写代码", "zh", &[(Preference, &["Mac"])]),
        ("我们最终选择了B方案", "zh", &[(Decision, &["B方案"])]),
        ("我会说粤语", "zh", &[(Fact, &["粤语"])]),
        ("我练瑜伽五年了", "zh", &[(Fact, &["瑜伽"])]),
    ]
};

/// Batch B, harder and more indirect, written after A scored well. Its first
/// run prompted general fixes (modal adverbs after a Chinese subject, "I've
/// never liked", "we moved to", "please keep…", "our team decided",
/// output-format rules without 请, habits, "不怎么" is not a question), so B
/// is no longer clean.
const HELD_OUT_B: &[(&str, &str, Expected)] = {
    use MemoryKind::*;
    &[
        ("That's a great idea, let's talk later.", "en", &[]),
        ("I love how you explained that!", "en", &[]),
        ("I'm so happy right now", "en", &[]),
        ("I had pasta for lunch.", "en", &[]),
        ("Could you summarize this article for me?", "en", &[]),
        ("I went to the gym this morning.", "en", &[]),
        ("I need a moment.", "en", &[]),
        ("It's been a long week.", "en", &[]),
        (
            "Honestly, I've never liked jazz.",
            "en",
            &[(Preference, &["jazz"])],
        ),
        (
            "I'm lactose intolerant, so no dairy please.",
            "en",
            &[(Fact, &["lactose"])],
        ),
        (
            "We just moved to Austin last month.",
            "en",
            &[(Fact, &["Austin"])],
        ),
        ("My partner is a chef.", "en", &[(Fact, &["chef"])]),
        (
            "Please keep your answers under 200 words.",
            "en",
            &[(Rule, &["200 words"])],
        ),
        (
            "Going forward, cc my assistant on everything.",
            "en",
            &[(Rule, &["assistant"])],
        ),
        ("I'm learning to play chess.", "en", &[(Status, &["chess"])]),
        (
            "We're going with the Tuesday slot for the weekly sync.",
            "en",
            &[(Decision, &["Tuesday"])],
        ),
        (
            "Coffee makes me jittery, so I stick to decaf.",
            "en",
            &[(Preference, &["decaf"])],
        ),
        ("I teach piano on weekends.", "en", &[(Fact, &["piano"])]),
        (
            "Don't ever book me on red-eye flights.",
            "en",
            &[(Rule, &["red-eye"])],
        ),
        (
            "Our team decided to drop the legacy API.",
            "en",
            &[(Decision, &["legacy API"])],
        ),
        (
            "I'm hoping to retire by 55.",
            "en",
            &[(Status, &["retire"])],
        ),
        ("My birthday is March 3rd.", "en", &[(Fact, &["March"])]),
        ("哇，这也太厉害了吧", "zh", &[]),
        ("我今天中午吃了牛肉面", "zh", &[]),
        ("帮我查一下明天的天气", "zh", &[]),
        ("你说得对", "zh", &[]),
        ("我昨天加班到十点", "zh", &[]),
        ("好久不见啊", "zh", &[]),
        ("有点饿了", "zh", &[]),
        ("这个方案你再改改", "zh", &[]),
        ("我平时不怎么喝咖啡", "zh", &[(Preference, &["咖啡"])]),
        ("我家在杭州西湖边", "zh", &[(Fact, &["杭州"])]),
        ("我女朋友是护士", "zh", &[(Fact, &["护士"])]),
        ("回复尽量简短一点", "zh", &[(Rule, &["简短"])]),
        ("以后开会纪要发我邮箱", "zh", &[(Rule, &["邮箱"])]),
        ("我们定了周五上线", "zh", &[(Decision, &["周五"])]),
        ("我最近在减肥，晚上不吃主食", "zh", &[(Status, &["减肥"])]),
        ("我是左撇子", "zh", &[(Fact, &["左撇子"])]),
        ("我打小就怕狗", "zh", &[(Preference, &["狗"])]),
        ("我一直用 iPhone", "zh", &[(Preference, &["iPhone"])]),
        ("我不能吃辣，一吃就胃疼", "zh", &[(Preference, &["辣"])]),
        ("我下个月要搬到深圳", "zh", &[(Status, &["深圳"])]),
        ("我今年三十二岁", "zh", &[(Fact, &["三十二岁"])]),
        ("千万别给我订靠窗的座位", "zh", &[(Rule, &["靠窗"])]),
        ("咱们还是选第二家供应商吧", "zh", &[(Decision, &["第二家"])]),
        ("我周末一般去打羽毛球", "zh", &[(Preference, &["羽毛球"])]),
    ]
};

/// Batch C, written after those fixes and scored once: its misses are left
/// as they are, so it is the honest estimate.
const HELD_OUT_C: &[(&str, &str, Expected)] = {
    use MemoryKind::*;
    &[
        ("Wait, what did you mean by that?", "en", &[]),
        ("Awesome, that worked perfectly.", "en", &[]),
        ("Ugh, traffic was terrible this morning.", "en", &[]),
        ("I'm back.", "en", &[]),
        ("Just checking in.", "en", &[]),
        ("Nice, I'll try that later.", "en", &[]),
        (
            "I'm a night owl, I do my best work after midnight.",
            "en",
            &[(Fact, &["night owl"])],
        ),
        (
            "I absolutely hate being put on hold.",
            "en",
            &[(Preference, &["on hold"])],
        ),
        ("My kids are 4 and 7.", "en", &[(Fact, &["kids"])]),
        (
            "We settled on Lisbon for the honeymoon.",
            "en",
            &[(Decision, &["Lisbon"])],
        ),
        (
            "Please always cite your sources.",
            "en",
            &[(Rule, &["sources"])],
        ),
        (
            "No more than three bullet points per answer, please.",
            "en",
            &[(Rule, &["three bullet points"])],
        ),
        ("I've been vegan since 2019.", "en", &[(Fact, &["vegan"])]),
        (
            "I'm thinking about getting a dog.",
            "en",
            &[(Status, &["dog"])],
        ),
        (
            "I work remotely for a company in Berlin.",
            "en",
            &[(Fact, &["Berlin"])],
        ),
        (
            "Dark mode everywhere, I can't stand bright screens.",
            "en",
            &[(Preference, &["bright screens"])],
        ),
        ("I'm saving up for a house.", "en", &[(Status, &["house"])]),
        (
            "Mandarin is my native language.",
            "en",
            &[(Fact, &["Mandarin"])],
        ),
        ("等我一下", "zh", &[]),
        ("你猜怎么着", "zh", &[]),
        ("今天堵车堵了一个小时", "zh", &[]),
        ("这道题好难啊", "zh", &[]),
        ("嗯，有道理", "zh", &[]),
        ("明天见！", "zh", &[]),
        ("我是夜猫子，一般凌晨才睡", "zh", &[(Fact, &["夜猫子"])]),
        ("我儿子对芒果过敏", "zh", &[(Fact, &["芒果"])]),
        ("我们已经定好了去云南的机票", "zh", &[(Decision, &["云南"])]),
        ("以后给我的建议都附上来源", "zh", &[(Rule, &["来源"])]),
        ("我不喜欢太甜的东西", "zh", &[(Preference, &["甜"])]),
        ("我在准备雅思考试", "zh", &[(Status, &["雅思"])]),
        ("我在一家外企做产品经理", "zh", &[(Fact, &["产品经理"])]),
        ("我老公是四川人", "zh", &[(Fact, &["四川"])]),
        ("我平时都骑车上班", "zh", &[(Fact, &["骑车"])]),
        ("我更习惯用微信联系", "zh", &[(Preference, &["微信"])]),
        ("请别在晚上十点以后给我发消息", "zh", &[(Rule, &["十点"])]),
        ("我计划年底前还清房贷", "zh", &[(Status, &["房贷"])]),
    ]
};

const HELD_OUT: &[&[(&str, &str, Expected)]] = &[HELD_OUT_A, HELD_OUT_B, HELD_OUT_C];

#[derive(Default, Debug)]
struct Score {
    lines: usize,
    expected: usize,
    found: usize,
    produced: usize,
    correct: usize,
}

impl Score {
    fn precision(&self) -> f64 {
        if self.produced == 0 {
            1.0
        } else {
            self.correct as f64 / self.produced as f64
        }
    }

    fn recall(&self) -> f64 {
        if self.expected == 0 {
            1.0
        } else {
            self.found as f64 / self.expected as f64
        }
    }

    fn add(&mut self, other: &Score) {
        self.lines += other.lines;
        self.expected += other.expected;
        self.found += other.found;
        self.produced += other.produced;
        self.correct += other.correct;
    }

    fn print(&self, label: &str) {
        println!(
            "{label:<12} lines {:>3} expected {:>3} found {:>3} produced {:>3} correct {:>3} precision {:.3} recall {:.3}",
            self.lines,
            self.expected,
            self.found,
            self.produced,
            self.correct,
            self.precision(),
            self.recall()
        );
    }
}

/// Scores one language per batch (printed; `--nocapture` shows it) and
/// returns (batch C, all batches).
async fn score(lang: &str) -> (Score, Score) {
    let mut total = Score::default();
    let mut last = Score::default();
    for (batch_index, batch) in HELD_OUT.iter().enumerate() {
        let mut score = Score::default();
        for (text, _, expected) in batch.iter().filter(|(_, l, _)| *l == lang) {
            let produced = extract(text).await;
            let mut used = vec![false; produced.len()];
            for (kind, needles) in expected.iter() {
                let hit = (0..produced.len()).find(|&i| {
                    let content = produced[i].content.to_lowercase();
                    !used[i]
                        && produced[i].kind == *kind
                        && needles.iter().all(|n| content.contains(&n.to_lowercase()))
                });
                if let Some(i) = hit {
                    used[i] = true;
                    score.found += 1;
                }
            }
            let correct = used.iter().filter(|u| **u).count();
            if correct != produced.len() || correct != expected.len() {
                println!("MISS [{lang}] {text}");
                for (i, c) in produced.iter().enumerate() {
                    let mark = if used[i] { "+" } else { "-" };
                    println!(
                        "    {mark} {:?} {:.2} {:?}",
                        c.kind, c.confidence, c.content
                    );
                }
            }
            score.lines += 1;
            score.expected += expected.len();
            score.produced += produced.len();
            score.correct += correct;
        }
        let label = format!("{lang} batch {}", ["A", "B", "C"][batch_index]);
        score.print(&label);
        total.add(&score);
        last = score;
    }
    total.print(&format!("{lang} all"));
    (last, total)
}

#[tokio::test]
async fn held_out_english_set_scores_well() {
    let (fresh, all) = score("en").await;
    assert!(all.precision() >= 0.9 && all.recall() >= 0.85, "{all:?}");
    assert!(
        fresh.precision() >= 0.9 && fresh.recall() >= 0.75,
        "{fresh:?}"
    );
}

#[tokio::test]
async fn held_out_chinese_set_scores_well() {
    let (fresh, all) = score("zh").await;
    assert!(all.precision() >= 0.9 && all.recall() >= 0.85, "{all:?}");
    assert!(
        fresh.precision() >= 0.8 && fresh.recall() >= 0.65,
        "{fresh:?}"
    );
}
