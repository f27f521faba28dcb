//! Regime detection on synthetic series: two regimes, one, drift without regimes, noise, stalls.

use super::*;
use crate::core::hash::splitmix64;
use crate::core::units::format_latency as latency;
use crate::measure::series::windows;

/// A normal draw (Box-Muller) from the generator's state.
fn normal(state: &mut u64) -> f64 {
    *state = splitmix64(*state);
    let u1 = ((*state >> 11) as f64 + 0.5) / (1u64 << 53) as f64;
    *state = splitmix64(*state);
    let u2 = ((*state >> 11) as f64 + 0.5) / (1u64 << 53) as f64;
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

/// A case measured in rounds of `round_ns` every `every_ns` over `total_ns`, each commit's median
/// latency `level(t)` at its time, with log-normal noise of `sigma`; its windows on the run's axis.
fn case_windows(
    level: impl Fn(u64) -> f64,
    sigma: f64,
    round_ns: u64,
    every_ns: u64,
    total_ns: u64,
    seed: u64,
) -> Vec<Window> {
    let mut state = seed;
    let mut out = Vec::new();
    let mut start = 0;
    while start < total_ns {
        let (mut t, mut lat) = (start, Vec::new());
        while t < start + round_ns {
            let ns = (level(t) * (sigma * normal(&mut state)).exp()) as u64;
            lat.push(ns.max(1));
            t += ns.max(1);
        }
        out.extend(windows(&lat, start));
        start += every_ns;
    }
    out
}

/// 180 µs and 3.8 ms, switching every 4 s (the project VM's disk).
fn switching(t: u64) -> f64 {
    if (t / 4_000_000_000).is_multiple_of(2) { 180_000.0 } else { 3_800_000.0 }
}

#[test]
fn two_regimes_are_found_with_their_medians_and_shares() {
    let w = case_windows(switching, 0.3, 20_000_000_000, 20_000_000_000, 20_000_000_000, 1);
    let r = detect(&w).expect("two regimes");
    let (fast, slow) = (&r.regimes[0], &r.regimes[1]);
    assert!((170_000..190_000).contains(&fast.latency_ns_p50), "{r:?}");
    assert!((3_600_000..4_000_000).contains(&slow.latency_ns_p50), "{r:?}");
    // 0-4, 8-12, 16-20 s fast: 60% of the time.
    assert!((fast.time_share - 0.6).abs() < 0.03, "{r:?}");
    assert!(r.separation > 8.0, "{r:?}");
    let (f, s) = (fast.time_share * 100.0, slow.time_share * 100.0);
    let want = format!("two regimes: 180 µs for {f:.0}% of the time, {} for {s:.0}%", latency(slow.latency_ns_p50));
    assert_eq!(r.describe(), want);
}

#[test]
fn regimes_are_found_in_short_rounds_spread_over_the_run() {
    // What `run` sees: 80 ms rounds of this case every 700 ms, other cases in between.
    for seed in 1..20 {
        let w = case_windows(switching, 0.3, 80_000_000, 700_000_000, 20_000_000_000, seed);
        assert!(detect(&w).is_some(), "seed {seed}: {} windows", w.len());
    }
}

#[test]
fn a_steady_disk_has_no_regimes_however_noisy_its_commits() {
    for seed in 1..50 {
        for sigma in [0.05, 0.3, 1.0] {
            let w = case_windows(|_| 200_000.0, sigma, 80_000_000, 700_000_000, 20_000_000_000, seed);
            assert_eq!(detect(&w), None, "seed {seed}, sigma {sigma}");
        }
    }
}

#[test]
fn drift_without_regimes_is_refused() {
    // A disk slowing steadily from 200 µs to 2 ms over the run: the window medians spread 10× but form
    // one continuum, not two levels.
    for seed in 1..30 {
        let w = case_windows(
            |t| 200_000.0 * 10f64.powf(t as f64 / 20e9),
            0.2,
            80_000_000,
            700_000_000,
            20_000_000_000,
            seed,
        );
        assert_eq!(detect(&w), None, "seed {seed}");
    }
}

#[test]
fn noise_in_the_window_medians_is_not_a_regime() {
    // Window medians themselves scattered log-normally (σ 0.5 on the log: a 1.6× spread), no structure.
    let mut state = 9;
    for _ in 0..50 {
        let w: Vec<Window> = (0..40)
            .map(|i| {
                let p50 = (300_000.0 * (0.5 * normal(&mut state)).exp()) as u64;
                Window {
                    start_ns: i * 500_000_000,
                    duration_ns: 80_000_000,
                    commits: 50,
                    p50_ns: p50,
                    max_ns: p50 * 2,
                    regime: None,
                }
            })
            .collect();
        assert_eq!(detect(&w), None);
    }
}

#[test]
fn a_few_stalled_windows_or_too_few_windows_are_not_regimes() {
    let mut w = case_windows(|_| 200_000.0, 0.1, 80_000_000, 700_000_000, 20_000_000_000, 3);
    // One stalled window at 50×: a stall, not a regime (a regime needs two windows and 5% of the time).
    w[5].p50_ns = 10_000_000;
    w[5].duration_ns = 10_000_000;
    assert_eq!(detect(&w), None);
    let two_levels = case_windows(switching, 0.3, 80_000_000, 5_000_000_000, 20_000_000_000, 3);
    assert!(two_levels.len() < MIN_WINDOWS);
    assert_eq!(detect(&two_levels), None, "too few windows to tell");
}

#[test]
fn the_run_counts_switches_on_the_timeline_of_every_case() {
    // Three cases interleaved: each runs 80 ms rounds in turn, so together they cover the run.
    let cases: Vec<Vec<Window>> = (0..3u64)
        .map(|c| {
            let level = move |t: u64| switching(t) * (1.0 + c as f64 * 0.2);
            let mut w = case_windows(level, 0.2, 80_000_000, 240_000_000, 20_000_000_000, 5 + c);
            w.iter_mut().for_each(|w| w.start_ns += c * 80_000_000);
            w
        })
        .collect();
    let found: Vec<Option<Regimes>> = cases.iter().map(|w| detect(w)).collect();
    assert!(found.iter().all(Option::is_some));
    let input: Vec<(Option<&Regimes>, &[Window])> =
        found.iter().zip(&cases).map(|(r, w)| (r.as_ref(), &w[..])).collect();
    let run = of_run(&input).unwrap();
    assert!(run.switching && run.cases_with_regimes == 3, "{run:?}");
    // 20 s with a switch every 4 s: 4 switches.
    assert_eq!(run.switches, 4, "{run:?}");
    let every = run.switch_every_s.unwrap();
    assert!((3.8..4.3).contains(&every), "{run:?}");
    let text = sentence(&run, Some(("one_write fdatasync", found[0].as_ref().unwrap()))).unwrap();
    assert!(
        text.starts_with(
            "the device switched between latency regimes in 3 of 3 durable cases (one_write fdatasync: two regimes: 1"
        ),
        "{text}"
    );
    assert!(text.contains("switching every ~4."), "{text}");
}

#[test]
fn one_odd_window_is_not_two_switches_and_holes_are_not_time() {
    let w = |s: u64, r: u8| (s * 100_000_000, s * 100_000_000 + 80_000_000, r);
    // fast, fast, one slow window, fast, fast: no switch; then slow for good: one.
    let timeline = [w(0, 0), w(1, 0), w(2, 1), w(3, 0), w(4, 0), w(5, 1), w(6, 1), w(7, 1)];
    let (switches, observed) = switches_over(&timeline);
    assert_eq!(switches, 1);
    assert_eq!(observed, 780_000_000, "the 20 ms gaps between windows count");
    // A 10 s hole between two windows is not observed time.
    let (_, observed) = switches_over(&[(0, 80_000_000, 0), (10_000_000_000, 10_080_000_000, 0)]);
    assert_eq!(observed, 160_000_000);
}

#[test]
fn one_case_alone_does_not_make_the_device_switch() {
    let steady = case_windows(|_| 200_000.0, 0.2, 80_000_000, 700_000_000, 20_000_000_000, 1);
    let two = case_windows(switching, 0.2, 80_000_000, 700_000_000, 20_000_000_000, 1);
    let r = detect(&two);
    let mut input: Vec<(Option<&Regimes>, &[Window])> = vec![(r.as_ref(), &two[..])];
    input.extend(std::iter::repeat_n((None, &steady[..]), 5));
    let run = of_run(&input).unwrap();
    assert!(!run.switching && run.cases_analysed == 6, "{run:?}");
    assert_eq!(sentence(&run, None), None);
}

#[test]
fn latencies_read_as_people_write_them() {
    assert_eq!(latency(170_400), "170 µs");
    assert_eq!(latency(3_812_000), "3.8 ms");
    assert_eq!(latency(12_400_000), "12 ms");
    assert_eq!(seconds(4.06), "4.1 s");
    assert_eq!(seconds(0.25), "250 ms");
}

#[test]
fn a_slow_regime_spread_by_load_is_still_a_regime() {
    // Recorded shape (lab disk at 180/3800 µs with builds running): fast windows at 320-440 µs, slow ones
    // anywhere from 4 ms to 200 ms. The split must be the gap below the spread, not a cut through it.
    let p50s = [330, 340, 320, 390, 4_100, 12_000, 36_000, 54_000, 90_000, 200_000];
    let w: Vec<Window> = p50s
        .iter()
        .enumerate()
        .map(|(i, &us)| Window {
            start_ns: i as u64 * 1_000_000_000,
            duration_ns: 85_000_000,
            commits: 3,
            p50_ns: us * 1000,
            max_ns: us * 2000,
            regime: None,
        })
        .collect();
    let r = detect(&w).expect("regimes");
    assert_eq!((r.regimes[0].windows, r.regimes[1].windows), (4, 6), "{r:?}");
    assert!((1_000_000..4_000_000).contains(&r.threshold_ns), "{r:?}");
}

fn one_write(label: &str, fast_ns: u64, slow_ns: u64) -> crate::core::schema::CaseResult {
    let regime = |ns| Regime { latency_ns_p50: ns, time_share: 0.5, windows: 4 };
    crate::core::schema::CaseResult {
        label: label.into(),
        durable: true,
        ops: 100,
        regimes: Some(Regimes {
            regimes: vec![regime(fast_ns), regime(slow_ns)],
            separation: 9.0,
            threshold_ns: 1_000_000,
        }),
        ..crate::core::schema::CaseResult::default()
    }
}

#[test]
fn within_regimes_names_a_leader_only_when_it_leads_in_both_by_the_margin() {
    let (a, b) = (one_write("fdatasync", 180_000, 3_800_000), one_write("fsync", 400_000, 9_000_000));
    let text = within_regimes(&[&a, &b]);
    assert!(text.ends_with(": fdatasync is fastest in both"), "{text}");
    let c = one_write("open_datasync", 140_000, 8_000_000);
    let text = within_regimes(&[&a, &c]);
    assert!(
        text.ends_with("cannot decide: open_datasync leads in the fast regime, fdatasync in the slow one"),
        "{text}"
    );
    let close = one_write("fdatasync+direct", 190_000, 3_900_000);
    assert!(within_regimes(&[&a, &close]).ends_with("undecided: no method leads by 1.2× within a regime"));
    let steady =
        crate::core::schema::CaseResult { label: "fsync".into(), durable: true, ops: 100, ..Default::default() };
    let text = within_regimes(&[&a, &steady]);
    assert!(text.starts_with("within a regime: cannot decide") && text.contains("1 of 2 cases"), "{text}");
}
