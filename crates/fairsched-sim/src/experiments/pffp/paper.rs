//! The PFFP paper's numbers (spec/pffp.md and the paper's Tables 4–10),
//! printed beside ours.

/// φ and ψ of the grids: 0.001 to 0.01 in steps of 0.0009 (rows φ,
/// columns ψ).
pub fn grid_values() -> Vec<f64> {
    (0..11).map(|i| (10 + 9 * i) as f64 / 10_000.0).collect()
}

/// Table 4: Test 1's eight experiments (H, φ, ψ) and their ρ.
pub const TABLE4: [(f64, f64, f64, f64); 8] = [
    (0.71, 0.01, 0.01, 1.06),
    (0.78, 0.01, 0.01, 1.14),
    (0.71, 0.001, 0.001, 1.04),
    (0.78, 0.001, 0.001, 1.01),
    (0.71, 0.001, 0.01, 1.07),
    (0.78, 0.001, 0.01, 1.06),
    (0.71, 0.01, 0.001, 1.37),
    (0.78, 0.01, 0.001, 1.52),
];

/// Table 5 (Test 1, H = 0.78), rows φ, columns ψ: competitive factor.
pub const TABLE5: [[f64; 11]; 11] = [
    [
        1.041, 1.049, 1.109, 1.061, 1.046, 1.064, 1.024, 1.097, 1.060, 1.060, 1.060,
    ],
    [
        1.411, 1.044, 1.084, 1.096, 1.135, 1.077, 1.032, 1.035, 1.078, 1.089, 1.073,
    ],
    [
        1.276, 1.127, 1.107, 1.107, 1.005, 1.040, 1.151, 1.089, 1.054, 1.046, 1.064,
    ],
    [
        1.982, 1.181, 1.154, 1.067, 1.041, 1.079, 1.024, 1.093, 1.047, 1.025, 1.053,
    ],
    [
        1.998, 1.395, 1.099, 1.137, 1.060, 1.052, 1.125, 1.104, 1.043, 1.082, 1.014,
    ],
    [
        1.493, 2.019, 1.161, 1.371, 1.088, 1.087, 1.077, 1.079, 1.095, 1.188, 1.129,
    ],
    [
        1.552, 1.439, 1.581, 1.447, 1.156, 1.203, 1.102, 1.073, 1.041, 1.064, 1.054,
    ],
    [
        1.537, 1.885, 1.325, 1.383, 1.115, 1.232, 1.085, 1.122, 1.051, 1.040, 1.160,
    ],
    [
        1.536, 1.960, 1.920, 1.333, 1.555, 1.382, 1.101, 1.023, 1.155, 1.062, 1.078,
    ],
    [
        1.529, 1.962, 1.486, 1.281, 1.421, 1.157, 1.239, 1.052, 1.052, 1.143, 1.142,
    ],
    [
        1.521, 1.928, 1.591, 1.309, 1.295, 1.312, 1.220, 1.137, 1.141, 1.214, 1.140,
    ],
];

/// Table 7 (Test 3, machines of 2, 4, 8).
pub const TABLE7: [[f64; 11]; 11] = [
    [
        1.049, 1.099, 1.074, 1.023, 1.0, 1.035, 1.035, 1.035, 1.035, 1.035, 1.035,
    ],
    [
        1.078, 1.049, 1.112, 1.099, 1.0716, 1.034, 1.101, 1.048, 1.0, 1.057, 1.044,
    ],
    [
        1.078, 2.478, 1.049, 1.137, 1.056, 1.099, 1.048, 1.127, 1.045, 1.111, 1.048,
    ],
    [
        1.078, 1.078, 2.478, 1.049, 1.113, 1.110, 1.018, 1.099, 1.041, 1.066, 1.062,
    ],
    [
        1.078, 1.078, 1.354, 2.478, 1.049, 1.191, 1.048, 1.169, 1.099, 1.099, 1.039,
    ],
    [
        1.078, 1.078, 1.078, 2.478, 2.478, 1.049, 1.048, 1.137, 1.111, 1.056, 1.099,
    ],
    [
        1.078, 1.078, 1.078, 1.354, 2.478, 1.049, 1.049, 1.048, 1.108, 1.048, 1.169,
    ],
    [
        1.078, 1.078, 1.078, 1.078, 1.396, 2.478, 1.049, 1.049, 1.222, 1.113, 1.047,
    ],
    [
        1.078, 1.078, 1.078, 1.078, 1.354, 2.459, 2.478, 1.049, 1.049, 1.225, 1.161,
    ],
    [
        1.078, 1.078, 1.078, 1.078, 1.078, 1.354, 2.478, 2.478, 1.049, 1.049, 1.213,
    ],
    [
        1.078, 1.078, 1.078, 1.078, 1.078, 1.354, 1.963, 2.478, 2.478, 1.049, 1.049,
    ],
];

/// Table 9 (Test 5, machines of 50, 100, 150, bags of tasks).
pub const TABLE9: [[f64; 11]; 11] = [
    [
        1.2178, 1.1061, 1.101, 1.0873, 1.0594, 1.0596, 1.0853, 1.0817, 1.0453, 1.0606, 1.0573,
    ],
    [
        1.2178, 1.2122, 1.1365, 1.0973, 1.0998, 1.1055, 1.0644, 1.084, 1.0617, 1.0674, 1.0663,
    ],
    [
        1.2178, 1.5555, 1.2356, 1.166, 1.1234, 1.0824, 1.0781, 1.0902, 1.0964, 1.0652, 1.073,
    ],
    [
        1.2178, 1.5142, 1.5561, 1.2195, 1.1911, 1.1111, 1.1475, 1.1348, 1.0655, 1.0588, 1.08,
    ],
    [
        1.2178, 1.5324, 1.4419, 1.3778, 1.211, 1.1789, 1.1189, 1.0966, 1.1221, 1.0932, 1.0769,
    ],
    [
        1.2178, 1.5601, 1.5307, 1.5066, 1.5472, 1.223, 1.1669, 1.1944, 1.115, 1.1678, 1.071,
    ],
    [
        1.2178, 1.5758, 1.5194, 1.5241, 1.4987, 1.3684, 1.2631, 1.1747, 1.1245, 1.1561, 1.1299,
    ],
    [
        1.2178, 1.925, 1.4423, 1.5241, 1.4205, 1.4326, 1.3494, 1.2191, 1.2019, 1.2018, 1.1473,
    ],
    [
        1.2178, 2.0839, 1.5463, 1.6896, 1.4205, 1.4148, 1.4102, 1.3403, 1.2186, 1.1787, 1.1783,
    ],
    [
        1.253, 2.2122, 1.5049, 1.73, 1.6046, 1.4756, 1.5472, 1.4244, 1.3283, 1.2411, 1.253,
    ],
    [
        1.2178, 1.9614, 1.505, 1.64, 1.602, 1.5093, 1.5217, 1.5525, 1.5635, 1.4155, 1.2388,
    ],
];

/// Degradations (%) of Tables 6, 8 and 10: (strategy label, ρ, t_w,
/// mean, rank).
pub type PaperRow = (&'static str, f64, f64, f64, u32);

pub const TABLE6: [PaperRow; 6] = [
    ("MST", 0.0, 0.0, 0.0, 1),
    ("PFFP1", 1.52, 4.63, 3.07, 2),
    ("PFFP2", 1.70, 4.65, 3.17, 3),
    ("MSTUser", 36.33, 18.19, 27.26, 4),
    ("MLp", 191.72, 225.53, 208.62, 6),
    ("Rand", 47.71, 19.40, 33.55, 5),
];

pub const TABLE8: [PaperRow; 6] = [
    ("MST", 0.0, 0.0, 0.0, 1),
    ("PFFP1", 6.85, 1.38, 4.12, 3),
    ("PFFP2", 0.58, 0.70, 0.64, 2),
    ("MSTUser", 20.82, 7.77, 14.29, 4),
    ("MLp", 63.87, 100.82, 82.35, 6),
    ("Rand", 68.87, 57.27, 63.07, 5),
];

pub const TABLE10: [PaperRow; 5] = [
    ("MST", 0.0, 0.0, 0.0, 1),
    ("PFFP", 4.53, 8.9, 6.71, 2),
    ("MSTUser", 98.30, 37.57, 67.93, 4),
    ("MLp", 100.79, 150.72, 125.75, 5),
    ("Rand", 72.90, 27.59, 50.24, 3),
];

/// The paper's Table 2: jobs and tasks of each log (its versions).
pub const TABLE2: [(&str, u64, u64); 7] = [
    ("KTH-SP2", 28_490, 218_401),
    ("CTC-SP2", 79_302, 850_077),
    ("HPC2N", 527_371, 4_009_135),
    ("LANL-CM5", 201_387, 17_329_445),
    ("SDSC-BLUE", 250_440, 9_691_408),
    ("SDSC-DS", 96_089, 5_996_864),
    ("SDSC-SP2", 73_496, 712_775),
];

/// The paper's Table 2 as it names its files: (log, the version it ran,
/// its jobs). None of these versions is among the shared logs.
pub const TABLE2_LOGS: [(&str, &str, u64); 7] = [
    ("KTH-SP2", "KTH-SP2-1996-2", 28_490),
    ("CTC-SP2", "CTC-SP2-1996-2.1-cln", 79_302),
    ("HPC2N", "HPC2N-2002-1.1-cln", 527_371),
    ("LANL-CM5", "LANL-CM5-1994-3.1-cln", 201_387),
    ("SDSC-BLUE", "SDSC-BLUE-2000-3.1-cln", 250_440),
    ("SDSC-DS", "SDSC-DS-2004-1 Batch2", 96_089),
    ("SDSC-SP2", "SDSC-SP2-1998-3.1-cln", 73_496),
];

/// The paper's version of each log that ran, beside ours: `ran` holds
/// (log name, our file's version, our jobs after cleaning). `None` when
/// no log that ran is one of the paper's.
pub fn log_versions_note(ran: &[(&str, &str, usize)]) -> Option<String> {
    let pairs: Vec<String> = ran
        .iter()
        .filter_map(|&(name, ours, jobs)| {
            let (_, theirs, their_jobs) = TABLE2_LOGS.iter().find(|l| l.0.eq_ignore_ascii_case(name))?;
            let same = theirs.eq_ignore_ascii_case(ours);
            Some(format!(
                "{theirs} ({} jobs) against {ours} ({} jobs after cleaning){}",
                thousands(*their_jobs),
                thousands(jobs as u64),
                if same { ", the same version" } else { "" }
            ))
        })
        .collect();
    if pairs.is_empty() {
        return None;
    }
    let none_same = ran.iter().all(|&(name, ours, _)| {
        TABLE2_LOGS
            .iter()
            .find(|l| l.0.eq_ignore_ascii_case(name))
            .is_none_or(|l| !l.1.eq_ignore_ascii_case(ours))
    });
    Some(format!(
        "Log versions, the paper's Table 2 against this run: {}. {}",
        pairs.join("; "),
        if none_same {
            "None of the paper's versions is available here. Later versions of the archive's logs \
             drop, split or correct jobs, so the weeks, their job counts and the load they put on the \
             machines differ from the paper's, and so may the degradations and ranks."
        } else {
            "Where the versions differ, the weeks, their job counts and their load differ from the \
             paper's, and so may the degradations and ranks."
        }
    ))
}

/// `n` with a comma every three digits.
fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_log_note_pairs_each_log_that_ran_with_the_papers_version() {
        let note = log_versions_note(&[
            ("HPC2N", "HPC2N-2002-2.2-cln", 202_871),
            ("SDSC-DS", "SDSC-DS-2004-2.1-cln", 1_234),
        ])
        .unwrap();
        assert!(
            note.contains(
                "HPC2N-2002-1.1-cln (527,371 jobs) against HPC2N-2002-2.2-cln (202,871 jobs after cleaning)"
            ),
            "{note}"
        );
        assert!(
            note.contains("SDSC-DS-2004-1 Batch2 (96,089 jobs) against SDSC-DS-2004-2.1-cln (1,234 jobs")
        );
        assert!(note.contains("None of the paper's versions is available here"));
        // Only the logs that ran are named.
        assert!(!note.contains("KTH"));
        // A log of the paper's version is said to be one.
        let same = log_versions_note(&[("KTH-SP2", "KTH-SP2-1996-2", 28_490)]).unwrap();
        assert!(same.contains("the same version") && !same.contains("None of the paper's"));
        // Logs the paper does not name give no note.
        assert_eq!(log_versions_note(&[("RICC", "RICC-2010-2", 10)]), None);
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1_000), "1,000");
    }

    #[test]
    fn the_grid_steps_by_0_0009_from_0_001_to_0_01() {
        let g = grid_values();
        assert_eq!(g.len(), 11);
        assert_eq!(
            (g[0], g[1], g[4], g[8], g[10]),
            (0.001, 0.0019, 0.0046, 0.0082, 0.01)
        );
    }

    /// The paper's own statements about its tables hold for the copies.
    #[test]
    fn the_copied_tables_agree_with_the_papers_text() {
        let argmin = |t: &[[f64; 11]; 11]| {
            let mut best = (0, 0);
            for (i, row) in t.iter().enumerate() {
                for (j, &x) in row.iter().enumerate() {
                    if x < t[best.0][best.1] {
                        best = (i, j);
                    }
                }
            }
            best
        };
        // "the combination of ψ = 0.0046 and φ = 0.0028 produces the best result"
        assert_eq!(argmin(&TABLE5), (2, 4));
        // Table 9: "The best-found value is 1.0453, with φ = 0.001 and ψ = 0.0082"
        assert_eq!(argmin(&TABLE9), (0, 8));
        assert_eq!(TABLE9[0][8], 1.0453);
        // Table 7: best 1 at (0.001, 0.0046) and (0.0019, 0.0082)
        assert_eq!((TABLE7[0][4], TABLE7[1][8]), (1.0, 1.0));
        for t in [&TABLE6[..], &TABLE8[..], &TABLE10[..]] {
            for r in t {
                assert!((r.3 - (r.1 + r.2) / 2.0).abs() < 0.006, "{r:?}");
            }
        }
    }
}
