//! Submit order: non-monotone traces come back sorted (stably) and counted; sorted ones stream.

use crate::common::{gzip, line, ok_line, temp_file};
use fairsched_trace::{JobStream, StreamOptions, TraceError, scan};

/// Jobs 1..=6 with submits 10, 5, 10, 3, 5, 20 (user = id to tell equal submits apart).
fn unsorted() -> String {
    [(1, 10), (2, 5), (3, 10), (4, 3), (5, 5), (6, 20)]
        .iter()
        .map(|&(id, submit)| line(id, submit, 60, 1, 1, 1, id))
        .collect()
}

#[test]
fn non_monotone_is_sorted_stably_and_counted() {
    let stream = JobStream::from_reader("raw.swf", unsorted().as_bytes(), StreamOptions::default()).unwrap();
    assert!(stream.sorted());
    // 2 (5 < 10), 4 (3 < 10), 5 (5 < 10) are behind the running maximum.
    assert_eq!(stream.non_monotone_submits(), 3);
    assert_eq!(stream.loaded_jobs(), 6);
    let order: Vec<(u64, i64)> = stream
        .map(|j| j.map(|j| (j.id, j.submit)))
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(order, [(4, 3), (2, 5), (5, 5), (1, 10), (3, 10), (6, 20)]);
}

#[test]
fn file_path_sorts_too() {
    let (_dir, path) = temp_file("raw.swf.gz", &gzip(unsorted().as_bytes()));
    let s = scan(&path, false).unwrap();
    assert!(!s.monotone);
    assert_eq!(s.non_monotone_submits(), 3);
    let stream = JobStream::open(&path, StreamOptions::default()).unwrap();
    assert!(stream.sorted());
    let ids: Vec<u64> = stream.map(|j| j.unwrap().id).collect();
    assert_eq!(ids, [4, 2, 5, 1, 3, 6]);
}

#[test]
fn monotone_file_streams() {
    let text: String = [0, 0, 5, 5, 9]
        .iter()
        .enumerate()
        .map(|(i, &s)| ok_line(i as i64 + 1, s))
        .collect();
    let (_dir, path) = temp_file("sorted.swf", text.as_bytes());
    let mut stream = JobStream::open(&path, StreamOptions::default()).unwrap();
    assert!(!stream.sorted());
    assert_eq!(stream.loaded_jobs(), 0);
    assert_eq!(stream.by_ref().count(), 5);
    assert_eq!(stream.counts().kept, 5);
    assert_eq!(stream.non_monotone_submits(), 0);
}

#[test]
fn stale_scan_is_detected() {
    let sorted: String = (1..=3).map(|i| ok_line(i, i)).collect();
    let (_d1, sorted_path) = temp_file("sorted.swf", sorted.as_bytes());
    let (_d2, raw_path) = temp_file("raw.swf", unsorted().as_bytes());
    let stale = scan(&sorted_path, false).unwrap();
    let items: Vec<_> = JobStream::open_with_scan(&raw_path, StreamOptions::default(), &stale)
        .unwrap()
        .collect();
    let err = items.last().unwrap().as_ref().unwrap_err();
    assert!(
        matches!(
            err,
            TraceError::Unsorted {
                job: 2,
                submit: 5,
                previous: 10,
                ..
            }
        ),
        "{err:?}"
    );
}

#[test]
fn drops_do_not_count_as_out_of_order() {
    // The out-of-order record has run time -1 and is dropped: the kept stream is monotone.
    let text = [
        line(1, 10, 5, 1, 1, 1, 1),
        line(2, 3, -1, 1, 1, 1, 1),
        line(3, 11, 5, 1, 1, 1, 1),
    ]
    .concat();
    let (_dir, path) = temp_file("t.swf", text.as_bytes());
    let s = scan(&path, false).unwrap();
    assert!(s.monotone);
    assert_eq!(s.counts.runtime_unknown, 1);
}
