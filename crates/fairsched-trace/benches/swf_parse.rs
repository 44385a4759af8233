//! Parser throughput on a real log (HPC2N, ~20 MB of text), in memory and through gzip.
//!
//! `cargo bench -p fairsched-trace -- --warm-up-time 1 --measurement-time 3`

use std::hint::black_box;
use std::io::{Read, Write};
use std::path::Path;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use fairsched_trace::SwfReader;
use flate2::Compression;
use flate2::read::MultiGzDecoder;
use flate2::write::GzEncoder;

const TRACE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../../shared/data/traces/swf/HPC2N-2002-2.2-cln.swf.gz"
);

/// (gzip bytes, text bytes): the real log if present, else 200k synthetic lines.
fn inputs() -> (Vec<u8>, Vec<u8>) {
    if let Ok(gz) = std::fs::read(Path::new(TRACE)) {
        let mut text = Vec::new();
        MultiGzDecoder::new(&gz[..])
            .read_to_end(&mut text)
            .expect("valid gzip");
        return (gz, text);
    }
    eprintln!("{TRACE} not found: benchmarking 200k synthetic lines");
    let mut text = Vec::new();
    for i in 0..200_000u64 {
        let submit = i * 37;
        writeln!(
            text,
            "{i:>6} {submit:>8} {:>6} {:>6} {:>3} {:>6}.{:02} -1 {:>3} {:>6} -1 1 {:>3} 1 -1 -1 1 -1 -1",
            i % 5000,
            (i * 7919) % 100_000,
            1 + i % 64,
            (i * 31) % 90_000,
            i % 100,
            1 + i % 64,
            3600 * (1 + i % 48),
            i % 300
        )
        .unwrap();
    }
    let mut enc = GzEncoder::new(Vec::new(), Compression::default());
    enc.write_all(&text).unwrap();
    (enc.finish().unwrap(), text)
}

fn count_jobs<R: Read>(reader: SwfReader<R>) -> u64 {
    let mut n = 0u64;
    let mut sum = 0i64;
    for job in reader {
        let job = job.expect("valid trace");
        sum = sum.wrapping_add(job.run_time);
        n += 1;
    }
    black_box(sum);
    n
}

fn bench(c: &mut Criterion) {
    let (gz, text) = inputs();
    let mut group = c.benchmark_group("swf_parse");
    group.throughput(Throughput::Bytes(text.len() as u64));
    group.bench_function("text_in_memory", |b| {
        b.iter(|| count_jobs(SwfReader::from_reader("bench.swf", black_box(&text[..]))))
    });
    // Throughput is still per byte of *decompressed* text, so the two are comparable.
    group.bench_function("gzip_in_memory", |b| {
        b.iter(|| {
            count_jobs(SwfReader::from_reader(
                "bench.swf.gz",
                MultiGzDecoder::new(black_box(&gz[..])),
            ))
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
