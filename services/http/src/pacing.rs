//! Ingest pacing: when the consolidator trails what ingest accepts by more
//! than `[backlog] slowdown_seconds`, new messages are admitted at a rate
//! that follows what consolidation sustains, instead of at whatever rate
//! the clients post. Without it a sustained load grows the backlog without
//! bound until the ceiling refuses everything at once; with it the clients
//! feel the pipeline's real speed as slower answers, and the backlog stays
//! near the threshold (so it drains in about that many seconds).
//!
//! The controller is the one RocksDB uses to stall writes behind its
//! compaction ("delayed write rate"): measure nothing but the debt's
//! direction. Each second the consolidator's lag is read: while it trails
//! past the threshold and its lag grew, the rate is cut by a fifth; while
//! it trails and its lag did not grow, the rate is held; once it is back
//! within the threshold, the rate rises by a quarter a second. So the lag
//! settles at the threshold and the admitted rate around what
//! consolidation sustains. The rate starts from four fifths of what was
//! admitted in the second before, and pacing ends when the lag is gone or
//! the rate no longer binds. Admission is a virtual clock (a leaky bucket, GCRA): a
//! request of n messages waits until the clock, and moves it on by n ÷
//! rate; a request that would wait longer than [`Pacer::MAX_WAIT`] is
//! refused instead (503 `slow_down` with `Retry-After`), before anything
//! is appended.
//!
//! The rate is shared between tenants, so one tenant's flood does not
//! hold the others' requests behind it: each tenant posting has a clock
//! of its own, running at its share of the rate. The shares are a max-min
//! fair split of the rate by what each tenant asked for in the second
//! before (water-filling): a tenant that asks less than an equal share
//! uses what it asks (and may post up to an equal share without waiting),
//! and the tenants asking more split the rest evenly. A tenant that
//! starts posting while ingest is paced gets an equal share at once.
//!
//! The signal is the consolidator group's oldest unread record, not the
//! consolidation buffer: the buffer holds messages that wait for their
//! batch or their conversation's end by design, which pacing cannot
//! speed up. Every ingest process paces on the same shared reading, so N
//! ingest replicas converge as N senders do behind one congested link.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use mnemo_domain::TenantId;

use crate::backlog::GroupLag;

/// What a request of messages does now.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Pace {
    /// Admitted without waiting.
    Go,
    /// Admitted once this wait has passed.
    Wait(Duration),
    /// Not admitted: the wait would pass [`Pacer::MAX_WAIT`].
    Refuse {
        /// What the client is told to wait before trying again.
        retry_after: Duration,
        /// Messages per second ingest admits of this tenant now (its
        /// share of the rate).
        rate: f64,
    },
}

pub struct Pacer {
    /// How far behind the consolidator may trail before ingest is paced;
    /// None: never paced.
    slowdown: Option<Duration>,
    state: Mutex<State>,
}

#[derive(Debug)]
struct State {
    /// Messages per second while pacing, across every tenant; None while
    /// not.
    rate: Option<f64>,
    /// Each tenant posting while paced: its clock and its share.
    tenants: HashMap<TenantId, TenantPace>,
    /// When the rate was last adjusted, and the consolidator's lag then.
    adjusted: Option<(Instant, Option<u64>)>,
    /// Messages admitted since that adjustment.
    admitted: u64,
}

#[derive(Debug)]
struct TenantPace {
    /// When the tenant's next message may be admitted (its virtual clock).
    next_free: Instant,
    /// Messages per second of the rate the tenant may use; None until the
    /// next adjustment for a tenant that began posting since the last
    /// (it gets an equal share meanwhile).
    share: Option<f64>,
    /// Messages the tenant asked to post since the last adjustment,
    /// refused ones included: its demand.
    asked: u64,
}

impl TenantPace {
    /// Messages per second the tenant may use now: its share, or an equal
    /// share of `rate` between the `posting` tenants until the next
    /// adjustment gives it one.
    fn share(&self, rate: f64, posting: usize) -> f64 {
        self.share.unwrap_or(rate / posting.max(1) as f64)
    }
}

/// Splits `rate` between tenants asking `demands` messages per second
/// (max-min fairness, by water-filling): in order of demand, each tenant
/// gets an equal share of what is left; a tenant asking less than that
/// leaves the rest to the others, which then split more. A share is never
/// below the equal share at the tenant's turn, so a light tenant's bursts
/// up to it do not wait.
fn fair_shares(rate: f64, demands: &[f64]) -> Vec<f64> {
    let mut order: Vec<usize> = (0..demands.len()).collect();
    order.sort_by(|&a, &b| demands[a].total_cmp(&demands[b]));
    let mut shares = vec![0.0; demands.len()];
    let mut left = rate;
    for (turn, &i) in order.iter().enumerate() {
        let equal = left / (demands.len() - turn) as f64;
        shares[i] = equal.max(Pacer::MIN_RATE);
        left -= demands[i].min(equal);
    }
    shares
}

impl Pacer {
    /// The rate is adjusted at most this often (the backlog reading's
    /// freshness).
    pub const ADJUST_EVERY: Duration = Duration::from_secs(1);
    /// The longest a request is held; past it the request is refused.
    /// Well inside the 30 s timeouts of the SDKs.
    pub const MAX_WAIT: Duration = Duration::from_secs(10);
    /// The cut while the consolidator trails and its lag grows, and the
    /// rise once it is back within the threshold.
    const SLOWER: f64 = 0.8;
    const FASTER: f64 = 1.25;
    /// The rate never falls below this many messages per second: with the
    /// consolidator stopped, requests of a few messages still trickle in,
    /// and larger ones are refused with a time to retry.
    const MIN_RATE: f64 = 1.0;

    pub fn new(slowdown: Option<Duration>) -> Self {
        Pacer {
            slowdown,
            state: Mutex::new(State {
                rate: None,
                tenants: HashMap::new(),
                adjusted: None,
                admitted: 0,
            }),
        }
    }

    /// Whether ingest is paced at all (`slowdown_seconds` is not 0).
    pub fn enabled(&self) -> bool {
        self.slowdown.is_some()
    }

    /// Messages per second admitted now; None while not pacing.
    pub fn rate(&self) -> Option<f64> {
        self.lock().rate
    }

    /// Adjusts the rate to a reading of the consolidator's group (None: the
    /// process cannot see it, and nothing changes), at most once per
    /// [`Self::ADJUST_EVERY`].
    pub fn observe(&self, consolidator: Option<&GroupLag>, now: Instant) {
        let (Some(slowdown), Some(group)) = (self.slowdown, consolidator) else {
            return;
        };
        let mut state = self.lock();
        let Some((at, last_lag)) = state.adjusted else {
            state.adjusted = Some((now, group.records));
            state.admitted = 0;
            return;
        };
        let since = now.saturating_duration_since(at);
        if since < Self::ADJUST_EVERY {
            return;
        }
        let admitted = state.admitted as f64 / since.as_secs_f64();
        let behind = group
            .oldest_seconds
            .is_some_and(|age| age > slowdown.as_secs_f64());
        let lag = group.records;
        let grew = matches!((last_lag, lag), (Some(before), Some(after)) if after > before);
        state.rate = match state.rate {
            None if behind => Some((admitted * Self::SLOWER).max(Self::MIN_RATE)),
            None => None,
            // Caught up, or the rate no longer holds anybody back.
            Some(_) if lag == Some(0) => None,
            Some(rate) if !behind && rate > 2.0 * admitted => None,
            Some(rate) if behind && grew => Some((rate * Self::SLOWER).max(Self::MIN_RATE)),
            // Behind and not growing: the rate is at or below what
            // consolidation sustains; held until the lag is back within the
            // threshold, so the lag settles there instead of above it.
            Some(rate) if behind => Some(rate),
            Some(rate) => Some(rate * Self::FASTER),
        };
        match state.rate {
            // A clock left ahead by this spell of pacing is not the next
            // one's debt.
            None => state.tenants.clear(),
            Some(rate) => {
                let seconds = since.as_secs_f64();
                // A tenant that asked nothing and owes nothing is forgotten.
                state
                    .tenants
                    .retain(|_, tenant| tenant.asked > 0 || tenant.next_free > now);
                let demands: Vec<f64> = state
                    .tenants
                    .values()
                    .map(|tenant| tenant.asked as f64 / seconds)
                    .collect();
                let shares = fair_shares(rate, &demands);
                for (tenant, share) in state.tenants.values_mut().zip(shares) {
                    tenant.share = Some(share);
                    tenant.asked = 0;
                }
            }
        }
        state.adjusted = Some((now, lag));
        state.admitted = 0;
    }

    /// Admits a request of `tenant`'s `messages` at `now`: at once, after
    /// a wait, or not at all. An admitted request's messages move the
    /// tenant's clock on; a refused one's do not.
    pub fn reserve(&self, tenant: &TenantId, messages: u64, now: Instant) -> Pace {
        let mut state = self.lock();
        let Some(rate) = state.rate else {
            state.admitted += messages;
            return Pace::Go;
        };
        let posting = state.tenants.len() + usize::from(!state.tenants.contains_key(tenant));
        let pace = state
            .tenants
            .entry(tenant.clone())
            .or_insert_with(|| TenantPace {
                next_free: now,
                share: None,
                asked: 0,
            });
        pace.asked += messages;
        let share = pace.share(rate, posting);
        let start = pace.next_free.max(now);
        let wait = start - now;
        if wait > Self::MAX_WAIT {
            return Pace::Refuse {
                retry_after: wait,
                rate: share,
            };
        }
        pace.next_free = start + Duration::from_secs_f64(messages as f64 / share);
        state.admitted += messages;
        match wait.is_zero() {
            true => Pace::Go,
            false => Pace::Wait(wait),
        }
    }

    /// Gives back what an admitted request of `tenant`'s `messages` took
    /// when a later check refuses it after all (the tenant's quota), so
    /// the tenant's next requests do not wait for messages never appended.
    pub fn release(&self, tenant: &TenantId, messages: u64) {
        let mut state = self.lock();
        state.admitted = state.admitted.saturating_sub(messages);
        let Some(rate) = state.rate else {
            return;
        };
        let posting = state.tenants.len();
        if let Some(pace) = state.tenants.get_mut(tenant) {
            let took = Duration::from_secs_f64(messages as f64 / pace.share(rate, posting));
            pace.next_free = pace.next_free.checked_sub(took).unwrap_or(pace.next_free);
            pace.asked = pace.asked.saturating_sub(messages);
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn acme() -> TenantId {
        TenantId::parse("acme").unwrap()
    }

    fn group(records: u64, oldest_seconds: Option<f64>) -> GroupLag {
        GroupLag {
            group: "consolidator".into(),
            records: Some(records),
            oldest_seconds,
        }
    }

    /// Admits `per_second` messages in requests of 10 over one second from
    /// `at`, and says how long the last one waits.
    fn post_for_a_second(pacer: &Pacer, at: Instant, per_second: u64) -> Pace {
        let mut last = Pace::Go;
        for i in 0..per_second / 10 {
            let now = at + Duration::from_secs_f64(i as f64 * 10.0 / per_second as f64);
            last = pacer.reserve(&acme(), 10, now);
        }
        last
    }

    #[test]
    fn a_consolidator_within_the_threshold_paces_nothing() {
        let pacer = Pacer::new(Some(Duration::from_secs(5)));
        let t0 = Instant::now();
        pacer.observe(Some(&group(100, Some(1.0))), t0);
        assert_eq!(post_for_a_second(&pacer, t0, 1000), Pace::Go);
        pacer.observe(Some(&group(5000, Some(4.9))), t0 + Duration::from_secs(1));
        assert_eq!(pacer.rate(), None);
        assert_eq!(
            pacer.reserve(&acme(), 100, t0 + Duration::from_secs(1)),
            Pace::Go
        );
    }

    #[test]
    fn off_never_paces() {
        let pacer = Pacer::new(None);
        assert!(!pacer.enabled());
        let t0 = Instant::now();
        pacer.observe(Some(&group(100, Some(100.0))), t0);
        pacer.observe(Some(&group(9000, Some(200.0))), t0 + Duration::from_secs(2));
        assert_eq!(pacer.rate(), None);
    }

    #[test]
    fn a_trailing_consolidator_paces_ingest_below_what_it_admitted_and_lower_while_the_lag_grows() {
        let pacer = Pacer::new(Some(Duration::from_secs(5)));
        let t0 = Instant::now();
        let second = |n: u64| t0 + Duration::from_secs(n);
        pacer.observe(Some(&group(1000, Some(2.0))), t0);
        post_for_a_second(&pacer, t0, 1000);
        // Behind: the rate starts at four fifths of the second before.
        pacer.observe(Some(&group(6000, Some(6.0))), second(1));
        let rate = pacer.rate().expect("paced");
        assert!((rate - 800.0).abs() < 1.0, "{rate}");
        // 100 messages at 800/s: the next request waits an eighth of a second.
        assert_eq!(pacer.reserve(&acme(), 100, second(1)), Pace::Go);
        match pacer.reserve(&acme(), 10, second(1)) {
            Pace::Wait(wait) => assert!((wait.as_secs_f64() - 0.125).abs() < 1e-6, "{wait:?}"),
            other => panic!("{other:?}"),
        }
        // No earlier than a second; a flat lag keeps the rate, a growing
        // one cuts it by a fifth.
        pacer.observe(
            Some(&group(9000, Some(7.0))),
            second(1) + Duration::from_millis(500),
        );
        assert!((pacer.rate().unwrap() - 800.0).abs() < 1.0);
        pacer.observe(Some(&group(6000, Some(7.0))), second(2));
        assert!(
            (pacer.rate().unwrap() - 800.0).abs() < 1.0,
            "flat lag keeps the rate"
        );
        pacer.observe(Some(&group(7500, Some(7.0))), second(3));
        assert!((pacer.rate().unwrap() - 640.0).abs() < 1.0);
        // Shrinking but still behind: held, so the lag comes back to the
        // threshold.
        pacer.observe(Some(&group(7000, Some(6.0))), second(4));
        assert!((pacer.rate().unwrap() - 640.0).abs() < 1.0);
        // Within the threshold again, with clients posting more than the
        // rate: a quarter more each second.
        post_for_a_second(&pacer, second(4), 1000);
        pacer.observe(Some(&group(4000, Some(4.0))), second(5));
        assert!((pacer.rate().unwrap() - 800.0).abs() < 1.0);
        post_for_a_second(&pacer, second(5), 1000);
        pacer.observe(Some(&group(4500, Some(4.5))), second(6));
        assert!((pacer.rate().unwrap() - 1000.0).abs() < 1.0);
    }

    #[test]
    fn a_request_that_would_wait_too_long_is_refused_and_moves_nothing() {
        let pacer = Pacer::new(Some(Duration::from_secs(1)));
        let t0 = Instant::now();
        pacer.observe(Some(&group(10, Some(0.5))), t0);
        pacer.reserve(&acme(), 10, t0);
        pacer.observe(Some(&group(50, Some(2.0))), t0 + Duration::from_secs(1));
        // Ten messages in the second before: 8 messages a second now.
        let now = t0 + Duration::from_secs(1);
        assert_eq!(pacer.reserve(&acme(), 80, now), Pace::Go);
        // The clock is 10 s ahead; one more message would wait 10 s: held.
        assert_eq!(
            pacer.reserve(&acme(), 1, now),
            Pace::Wait(Duration::from_secs(10))
        );
        match pacer.reserve(&acme(), 1, now) {
            Pace::Refuse { retry_after, rate } => {
                assert!(retry_after > Pacer::MAX_WAIT, "{retry_after:?}");
                assert!((rate - 8.0).abs() < 1e-9);
            }
            other => panic!("{other:?}"),
        }
        // The refusal took no slot: later, the same request waits less.
        match pacer.reserve(&acme(), 1, now + Duration::from_secs(2)) {
            Pace::Wait(wait) => assert!(wait < Pacer::MAX_WAIT, "{wait:?}"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn pacing_ends_when_the_consolidator_catches_up_or_the_rate_stops_binding() {
        let start_pacing = || {
            let pacer = Pacer::new(Some(Duration::from_secs(5)));
            let t0 = Instant::now();
            pacer.observe(Some(&group(1000, Some(2.0))), t0);
            post_for_a_second(&pacer, t0, 1000);
            pacer.observe(Some(&group(6000, Some(6.0))), t0 + Duration::from_secs(1));
            assert!(pacer.rate().is_some());
            (pacer, t0)
        };
        let (pacer, t0) = start_pacing();
        // 8 s of the clock taken at 800 messages a second.
        pacer.reserve(&acme(), 6400, t0 + Duration::from_secs(1));
        pacer.observe(Some(&group(0, None)), t0 + Duration::from_secs(2));
        assert_eq!(pacer.rate(), None);
        assert_eq!(
            pacer.reserve(&acme(), 1000, t0 + Duration::from_secs(2)),
            Pace::Go
        );
        // Paced again later: the earlier spell's clock is not carried over.
        post_for_a_second(&pacer, t0 + Duration::from_secs(2), 1000);
        pacer.observe(Some(&group(6000, Some(6.0))), t0 + Duration::from_secs(3));
        assert!(pacer.rate().is_some());
        assert_eq!(
            pacer.reserve(&acme(), 10, t0 + Duration::from_secs(3)),
            Pace::Go
        );

        // Within the threshold the rate rises; once it is twice what the
        // clients post, pacing ends.
        let (pacer, t0) = start_pacing();
        let mut second = 2;
        while pacer.rate().is_some() {
            post_for_a_second(&pacer, t0 + Duration::from_secs(second - 1), 500);
            pacer.observe(
                Some(&group(3000, Some(3.0))),
                t0 + Duration::from_secs(second),
            );
            second += 1;
            assert!(second < 20, "pacing never ended");
        }
        assert!(second > 3, "the rate rose before pacing ended");
    }

    #[test]
    fn an_unseen_consolidator_changes_nothing() {
        let pacer = Pacer::new(Some(Duration::from_secs(1)));
        let t0 = Instant::now();
        pacer.observe(None, t0);
        pacer.observe(None, t0 + Duration::from_secs(5));
        assert_eq!(pacer.rate(), None);
    }

    #[test]
    fn fair_shares_give_light_tenants_what_they_ask_and_split_the_rest() {
        let shares = fair_shares(100.0, &[1000.0, 10.0]);
        // The light tenant may post up to an equal share; the heavy one
        // gets all the light one leaves.
        assert!((shares[1] - 50.0).abs() < 1e-9, "{shares:?}");
        assert!((shares[0] - 90.0).abs() < 1e-9, "{shares:?}");
        // Two heavy tenants split evenly, whatever they ask.
        let shares = fair_shares(100.0, &[1000.0, 300.0]);
        assert!((shares[0] - 50.0).abs() < 1e-9 && (shares[1] - 50.0).abs() < 1e-9);
        // Three: the light one's leftover goes to the two others.
        let shares = fair_shares(90.0, &[5.0, 500.0, 700.0]);
        assert!((shares[0] - 30.0).abs() < 1e-9, "{shares:?}");
        assert!((shares[1] - 42.5).abs() < 1e-9 && (shares[2] - 42.5).abs() < 1e-9);
        assert!(fair_shares(10.0, &[]).is_empty());
    }

    #[test]
    fn one_tenants_flood_does_not_hold_another_tenants_requests() {
        let pacer = Pacer::new(Some(Duration::from_secs(1)));
        let (flood, quiet) = (acme(), TenantId::parse("quiet").unwrap());
        let t0 = Instant::now();
        pacer.observe(Some(&group(10, Some(0.5))), t0);
        post_for_a_second(&pacer, t0, 1000);
        let second = |n: u64| t0 + Duration::from_secs(n);
        pacer.observe(Some(&group(5000, Some(2.0))), second(1));
        assert!((pacer.rate().unwrap() - 800.0).abs() < 1.0);
        // The flooding tenant takes its clock 10 s ahead…
        assert_eq!(pacer.reserve(&flood, 8100, second(1)), Pace::Go);
        assert!(matches!(
            pacer.reserve(&flood, 10, second(1)),
            Pace::Refuse { .. }
        ));
        // …and a tenant that starts posting now is not behind it: it gets
        // an equal share of its own at once.
        assert_eq!(pacer.reserve(&quiet, 100, second(1)), Pace::Go);
        match pacer.reserve(&quiet, 10, second(1)) {
            // 100 messages at half of 800 a second.
            Pace::Wait(wait) => assert!((wait.as_secs_f64() - 0.25).abs() < 1e-6, "{wait:?}"),
            other => panic!("{other:?}"),
        }
        // After an adjustment the shares follow what each asked: the quiet
        // tenant asked 110 and may post up to half the rate without
        // waiting; the flood gets the rest of the rate, 690 a second.
        pacer.observe(Some(&group(5000, Some(2.0))), second(2));
        let rate = pacer.rate().unwrap();
        assert!((rate - 800.0).abs() < 1.0, "{rate}");
        assert_eq!(pacer.reserve(&quiet, 100, second(2)), Pace::Go);
        // The flood's clock is 9.125 s ahead: 1000 more messages at 690 a
        // second take it past 10 s.
        assert!(matches!(
            pacer.reserve(&flood, 1000, second(2)),
            Pace::Wait(_)
        ));
        match pacer.reserve(&flood, 1, second(2)) {
            Pace::Refuse { rate, retry_after } => {
                assert!((rate - 690.0).abs() < 1.0, "{rate}");
                let expected = 9.125 + 1000.0 / 690.0;
                assert!(
                    (retry_after.as_secs_f64() - expected).abs() < 1e-3,
                    "{retry_after:?}"
                );
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_release_gives_the_tenant_its_slot_back() {
        let pacer = Pacer::new(Some(Duration::from_secs(1)));
        let t0 = Instant::now();
        pacer.observe(Some(&group(10, Some(0.5))), t0);
        post_for_a_second(&pacer, t0, 100);
        let now = t0 + Duration::from_secs(1);
        pacer.observe(Some(&group(500, Some(2.0))), now);
        // 80 a second: 400 messages take the clock 5 s ahead.
        assert_eq!(pacer.reserve(&acme(), 400, now), Pace::Go);
        pacer.release(&acme(), 400);
        assert_eq!(pacer.reserve(&acme(), 10, now), Pace::Go);
    }
}
