//! Throughput of the local embedder on all-MiniLM-L6-v2, one sentence per
//! call and batched. Run in release:
//!
//! ```sh
//! cargo run --release -p mnemo-embed --features testsupport --example embed_bench
//! ```

use std::time::Instant;

use mnemo_embed::{test_model_dir, Embedder, LocalEmbedder};

/// Memory-like sentences of varied length (5 to 30-odd tokens).
const SENTENCES: &[&str] = &[
    "The user lives in Lisbon.",
    "I am allergic to peanuts.",
    "We decided to book the flight to Barcelona.",
    "Remember: never call me before 9am.",
    "ok thanks",
    "What did Caroline realize after her charity race?",
    "Melanie: I painted a lake sunrise last year, it's special to me.",
    "我喜欢吃辣，尤其是川菜。",
    "用户住在北京。",
    "My daughter starts school in September and we still need to buy her uniform and books.",
    "The project deadline moved to the end of next quarter because the vendor is late.",
    "Prefers short answers with code examples rather than long explanations of the theory.",
];

#[tokio::main]
async fn main() {
    let dir = test_model_dir().await;
    let started = Instant::now();
    let embedder = LocalEmbedder::load(&dir, "sentence-transformers/all-MiniLM-L6-v2")
        .expect("the model loads");
    println!("load: {:.0} ms", started.elapsed().as_secs_f64() * 1e3);

    let texts: Vec<String> = SENTENCES
        .iter()
        .cycle()
        .take(240)
        .enumerate()
        .map(|(i, s)| format!("{s} (note {i})"))
        .collect();

    // Warm up allocations and thread pools.
    embedder.embed(&texts[..16]).await.unwrap();

    let started = Instant::now();
    let single = &texts[..96];
    for text in single {
        embedder.embed(std::slice::from_ref(text)).await.unwrap();
    }
    let seconds = started.elapsed().as_secs_f64();
    println!(
        "single:  {:>4} sentences in {:>6.2} s = {:>6.1} sentences/s ({:.1} ms each)",
        single.len(),
        seconds,
        single.len() as f64 / seconds,
        seconds * 1e3 / single.len() as f64
    );

    for batch_size in [8, 16, 32] {
        let embedder = LocalEmbedder::load(&dir, "sentence-transformers/all-MiniLM-L6-v2")
            .expect("the model loads")
            .with_batch_size(batch_size);
        embedder.embed(&texts[..batch_size]).await.unwrap();
        let started = Instant::now();
        embedder.embed(&texts).await.unwrap();
        let seconds = started.elapsed().as_secs_f64();
        println!(
            "batch {batch_size:>2}: {:>4} sentences in {:>6.2} s = {:>6.1} sentences/s",
            texts.len(),
            seconds,
            texts.len() as f64 / seconds
        );
    }

    // Texts past the model's 512 positions: cut at max_seq_length (256),
    // never an error.
    let long: Vec<String> = (0..16)
        .map(|i| format!("note {i}: {}", SENTENCES.join(" ").repeat(8)))
        .collect();
    assert!(long.iter().all(|t| embedder.token_count(t).unwrap() == 256));
    let started = Instant::now();
    let vectors = embedder
        .embed(&long)
        .await
        .expect("long texts are truncated");
    let seconds = started.elapsed().as_secs_f64();
    assert_eq!(vectors.len(), long.len());
    println!(
        "256-token texts, batch 16: {} in {:.2} s = {:.1} texts/s",
        long.len(),
        seconds,
        long.len() as f64 / seconds
    );
}
