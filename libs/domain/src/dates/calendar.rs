//! Calendar arithmetic shared by the English and Chinese rules. Every step
//! is checked: a reference date at the edge of chrono's range yields no
//! date rather than a panic. Weeks run Monday to Sunday (ISO 8601, and the
//! Chinese 周).

use chrono::{Datelike, Days, NaiveDate, Weekday};

use super::Granularity;

/// A resolved period before the scan attaches its span.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Period {
    pub start: NaiveDate,
    pub end: NaiveDate,
    pub granularity: Granularity,
}

/// The unit of a count (`3 weeks ago`, 两个月前) or of a period named
/// relative to the reference (`last month`, 去年).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Unit {
    Day,
    Week,
    Month,
    Year,
}

/// `last`, `this` or `next` (上, 这/本, 下).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Relation {
    Previous,
    Current,
    Following,
}

impl Relation {
    pub fn step(self) -> i64 {
        match self {
            Relation::Previous => -1,
            Relation::Current => 0,
            Relation::Following => 1,
        }
    }
}

impl Period {
    pub fn day(date: NaiveDate) -> Option<Period> {
        Some(Period {
            start: date,
            end: date,
            granularity: Granularity::Day,
        })
    }

    /// Monday to Sunday around `date`.
    pub fn week_of(date: NaiveDate) -> Option<Period> {
        let monday = monday_of(date)?;
        Some(Period {
            start: monday,
            end: shift_days(monday, 6)?,
            granularity: Granularity::Week,
        })
    }

    /// Saturday and Sunday of the week of `date`.
    pub fn weekend_of(date: NaiveDate) -> Option<Period> {
        let monday = monday_of(date)?;
        Some(Period {
            start: shift_days(monday, 5)?,
            end: shift_days(monday, 6)?,
            granularity: Granularity::Weekend,
        })
    }

    /// The calendar month with this [`month_index`].
    pub fn month(index: i64) -> Option<Period> {
        Period::months(index, 1, Granularity::Month)
    }

    /// The three months from the month with this [`month_index`].
    pub fn season(first_month_index: i64) -> Option<Period> {
        Period::months(first_month_index, 3, Granularity::Season)
    }

    pub fn year(year: i32) -> Option<Period> {
        Some(Period {
            start: NaiveDate::from_ymd_opt(year, 1, 1)?,
            end: NaiveDate::from_ymd_opt(year, 12, 31)?,
            granularity: Granularity::Year,
        })
    }

    /// The same period cut at `reference` (`earlier this month`).
    pub fn until(self, reference: NaiveDate) -> Period {
        Period {
            end: reference.clamp(self.start, self.end),
            ..self
        }
    }

    fn months(first_index: i64, count: i64, granularity: Granularity) -> Option<Period> {
        Some(Period {
            start: first_of_month(first_index)?,
            end: first_of_month(first_index.checked_add(count)?)?.pred_opt()?,
            granularity,
        })
    }
}

/// Months counted from year 0, so month arithmetic is integer arithmetic.
pub(super) fn month_index(date: NaiveDate) -> i64 {
    i64::from(date.year()) * 12 + i64::from(date.month0())
}

/// The [`month_index`] of `month` (1 to 12) in `year`.
pub(super) fn month_index_of(year: i32, month: u32) -> i64 {
    i64::from(year) * 12 + i64::from(month) - 1
}

fn first_of_month(index: i64) -> Option<NaiveDate> {
    let year = i32::try_from(index.div_euclid(12)).ok()?;
    let month0 = u32::try_from(index.rem_euclid(12)).ok()?;
    NaiveDate::from_ymd_opt(year, month0 + 1, 1)
}

pub(super) fn shift_days(date: NaiveDate, days: i64) -> Option<NaiveDate> {
    let magnitude = Days::new(days.unsigned_abs());
    if days >= 0 {
        date.checked_add_days(magnitude)
    } else {
        date.checked_sub_days(magnitude)
    }
}

fn monday_of(date: NaiveDate) -> Option<NaiveDate> {
    shift_days(date, -i64::from(date.weekday().num_days_from_monday()))
}

/// The `weekday` of the week of `date` (`this Friday`, 这周五).
pub(super) fn weekday_in_week_of(date: NaiveDate, weekday: Weekday) -> Option<NaiveDate> {
    shift_days(monday_of(date)?, i64::from(weekday.num_days_from_monday()))
}

/// The most recent `weekday` before `reference`, or on it when
/// `including_reference` (`on Monday`) rather than strictly before
/// (`last Monday`).
pub(super) fn most_recent_weekday(
    reference: NaiveDate,
    weekday: Weekday,
    including_reference: bool,
) -> Option<NaiveDate> {
    let back =
        (reference.weekday().num_days_from_monday() + 7 - weekday.num_days_from_monday()) % 7;
    let back = if back == 0 && !including_reference {
        7
    } else {
        back
    };
    shift_days(reference, -i64::from(back))
}

/// `count` units away from `reference`: a day, the week around the day
/// 7·count days away, the calendar month or the calendar year.
pub(super) fn units_from(reference: NaiveDate, unit: Unit, count: i64) -> Option<Period> {
    match unit {
        Unit::Day => Period::day(shift_days(reference, count)?),
        Unit::Week => Period::week_of(shift_days(reference, count.checked_mul(7)?)?),
        Unit::Month => Period::month(month_index(reference).checked_add(count)?),
        Unit::Year => {
            Period::year(i32::try_from(i64::from(reference.year()).checked_add(count)?).ok()?)
        }
    }
}

/// The weekend a past-leaning phrase means (`over the weekend`, a bare
/// 周末): the one under way on a Saturday or Sunday, else the last one.
pub(super) fn recent_weekend(reference: NaiveDate) -> Option<Period> {
    let on_weekend = reference.weekday().num_days_from_monday() >= 5;
    let anchor = if on_weekend {
        reference
    } else {
        shift_days(reference, -7)?
    };
    Period::weekend_of(anchor)
}

/// The most recent `month` (1 to 12) not after the reference month
/// (`in March`, 三月).
pub(super) fn most_recent_month(reference: NaiveDate, month: u32) -> Option<Period> {
    let in_reference_year = month_index_of(reference.year(), month);
    let back = if in_reference_year > month_index(reference) {
        12
    } else {
        0
    };
    Period::month(in_reference_year - back)
}

/// `last`, `this` or `next` `month`: strictly before the reference month,
/// in the reference year, strictly after the reference month.
pub(super) fn month_named(relation: Relation, month: u32, reference: NaiveDate) -> Option<Period> {
    let now = month_index(reference);
    let in_reference_year = month_index_of(reference.year(), month);
    let index = match relation {
        Relation::Previous if in_reference_year >= now => in_reference_year - 12,
        Relation::Following if in_reference_year <= now => in_reference_year + 12,
        _ => in_reference_year,
    };
    Period::month(index)
}

/// The most recent `month`/`day` not after `reference` (`May 7`, 5月7日).
/// February 29 goes back to the last leap year; a day no month has
/// (April 31) resolves to nothing.
pub(super) fn most_recent_date(reference: NaiveDate, month: u32, day: u32) -> Option<Period> {
    (0..=8)
        .filter_map(|back| reference.year().checked_sub(back))
        .filter_map(|year| NaiveDate::from_ymd_opt(year, month, day))
        .find(|date| *date <= reference)
        .and_then(Period::day)
}

/// A meteorological season of the northern hemisphere, given by its first
/// month: spring = 3 (March to May), summer = 6, fall = 9, winter = 12
/// (December to February).
///
/// `last`: the most recent one that ended before the reference month;
/// `next`: the first that starts after it; `this`: the one containing the
/// reference month, else the nearer of the other two, the past one on a
/// tie (`this summer` in October is the summer just gone, in April the
/// coming one).
pub(super) fn season(relation: Relation, first_month: u32, reference: NaiveDate) -> Option<Period> {
    let now = month_index(reference);
    let phase = i64::from(first_month) - 1;
    let latest_start_by = |index: i64| index - (index - phase).rem_euclid(12);
    let previous = latest_start_by(now - 3);
    let following = latest_start_by(now) + 12;
    let start = match relation {
        Relation::Previous => previous,
        Relation::Following => following,
        Relation::Current => {
            let current = latest_start_by(now);
            if now - current <= 2 {
                current
            } else if now - (previous + 2) <= following - now {
                previous
            } else {
                following
            }
        }
    };
    Period::season(start)
}
