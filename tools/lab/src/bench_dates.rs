//! `mnemo bench dates`: what finding and resolving the date phrases of a
//! message costs (`mnemo_domain::dates::resolve`). The scan runs on every
//! episode the projection indexes (its keyword text, with the turn before
//! it) and on every message the rules read, so it is paid several times a
//! message. The texts are the load benches' messages (`bench searchable
//! --text varied`) with every fourth one carrying English or Chinese date
//! phrases. Prints the median of the rounds; asserts nothing.

use std::time::Instant;

use chrono::NaiveDate;

#[derive(Debug, Clone)]
pub struct DatesBenchArgs {
    /// Distinct texts, each resolved once a round.
    pub texts: usize,
    pub rounds: usize,
}

/// Date phrases the rules and the episodes meet in conversations.
const DATED: [&str; 6] = [
    "Last Friday I went to the beach with my kids, it was May 7th, 2023",
    "Two weeks ago we adopted a puppy, he is three months old",
    "我昨天去了北京，下个月还要去上海",
    "We started the painting class in the summer of 2022",
    "The move is planned for 2023-06-15, the week after next",
    "三天前我们在杭州见面",
];

fn text(n: usize) -> String {
    if n.is_multiple_of(4) {
        format!("{} (#{n})", DATED[(n / 4) % DATED.len()])
    } else {
        crate::bench::varied_text(n)
    }
}

pub fn dates(args: DatesBenchArgs) -> anyhow::Result<()> {
    anyhow::ensure!(
        args.texts > 0 && args.rounds > 0,
        "texts and rounds must be positive"
    );
    let texts: Vec<String> = (0..args.texts).map(text).collect();
    let reference = NaiveDate::from_ymd_opt(2023, 5, 20).expect("a valid date");
    let mut per_text = Vec::with_capacity(args.rounds);
    let mut found = 0;
    for _ in 0..args.rounds {
        let started = Instant::now();
        found = texts
            .iter()
            .map(|text| mnemo_domain::dates::resolve(text, reference).len())
            .sum::<usize>();
        per_text.push(started.elapsed().as_secs_f64() * 1e6 / texts.len() as f64);
    }
    per_text.sort_by(f64::total_cmp);
    println!(
        "dates::resolve over {} texts ({} date phrases found), {} rounds: median {:.2} µs per text (fastest {:.2}, slowest {:.2})",
        texts.len(),
        found,
        args.rounds,
        per_text[per_text.len() / 2],
        per_text[0],
        per_text[per_text.len() - 1],
    );
    Ok(())
}
