//! A micro-benchmark of the interpreter alone: benchmarks/switch_l3.p4 (the program of
//! benchmarks/switch_rate.py, with its one route) over real 64-byte frames, in process,
//! no I/O. Prints CPU nanoseconds per packet (the thread's CPU time, so time the machine
//! gave to other work does not count); asserts only that every frame was forwarded.
//!
//!     cd switch && cargo test --release l3_ns_per_packet -- --ignored --nocapture
//!
//! `DPLAB_L3_PACKETS` sets the packets per sample (default 1M; fewer for a run under
//! valgrind, whose instruction counts do not depend on what else the machine runs).
//!
//! `forward_ns_per_packet` does the same for benchmarks/switch_forward.p4 (IR from
//! `DPLAB_FWD_IR`): the fixed cost per packet.
//!
//! `l3_lone_packet_ns` measures one packet after an idle spell, cold and rehearsed.
//!
//! It compiles the program with the repository's `.venv/bin/dplab`, or reads the IR from
//! `DPLAB_L3_IR` when that is set.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::{Runtime, Worker};
use crate::dataplane::thread_cpu_ns;
use crate::tables::{ActionCall, EntryAction, FieldMatch};

fn l3_ir() -> PathBuf {
    if let Ok(path) = std::env::var("DPLAB_L3_IR") {
        return PathBuf::from(path);
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let out = std::env::temp_dir().join(format!("dplab-l3bench-{}", std::process::id()));
    let done = std::process::Command::new(root.join(".venv/bin/dplab"))
        .args(["p4", "compile"])
        .arg(root.join("benchmarks/switch_l3.p4"))
        .arg("-o")
        .arg(&out)
        .output()
        .expect("run .venv/bin/dplab (or set DPLAB_L3_IR)");
    assert!(
        done.status.success(),
        "{}",
        String::from_utf8_lossy(&done.stderr)
    );
    out.join("switch_l3.ir.json")
}

/// 60-byte Ethernet/IPv4/UDP frame to 10.0.2.<host>, IPv4 checksum correct.
fn frame(host: u8) -> Vec<u8> {
    let mut f = vec![2, 0, 0, 0, 0, 0xaa, 2, 0, 0, 0, 0, 1, 8, 0];
    let mut ip = vec![
        0x45, 0, 0, 46, 0, 1, 0, 0, 64, 17, 0, 0, 10, 0, 1, 1, 10, 0, 2, host,
    ];
    let sum = crate::hashes::csum16(&ip);
    ip[10..12].copy_from_slice(&sum.to_be_bytes());
    f.extend_from_slice(&ip);
    f.extend_from_slice(&[0x04, 0xd2, 0x16, 0x2e, 0, 26, 0, 0]);
    f.resize(60, 0);
    f
}

/// The benchmark's program with its one route, a worker, and 16 frames to send.
fn l3_setup() -> (Runtime, Worker, Vec<Vec<u8>>) {
    let ir: serde_json::Value =
        serde_json::from_slice(&std::fs::read(l3_ir()).expect("read the IR")).expect("IR JSON");
    let prog = Arc::new(crate::program::load(&ir).expect("load the IR"));
    let mut rt = Runtime::new(prog.clone()).expect("runtime");
    let forward = prog
        .actions
        .iter()
        .position(|a| a.name == "L3Ingress.ipv4_forward");
    let call = ActionCall {
        action: forward.expect("ipv4_forward"),
        params: vec![0x0200_0000_0002, 2],
    };
    rt.tables[0]
        .insert(
            &[FieldMatch::Lpm(0x0a00_0200, 24)],
            0,
            EntryAction::Direct(call),
        )
        .expect("route");
    let frames = (1..=16).map(frame).collect();
    (rt, Worker::new(&prog), frames)
}

#[test]
#[ignore]
fn l3_ns_per_packet() {
    let (mut rt, mut worker, frames) = l3_setup();
    println!(
        "switch_l3: {}",
        ns_per_packet(&mut rt, &mut worker, &frames)
    );
}

/// The same over benchmarks/switch_forward.p4 (no parse, no table: the interpreter's fixed
/// cost per packet), its IR read from `DPLAB_FWD_IR`.
///
///     DPLAB_FWD_IR=... cargo test --release forward_ns_per_packet -- --ignored --nocapture
#[test]
#[ignore]
fn forward_ns_per_packet() {
    let path = std::env::var("DPLAB_FWD_IR").expect("DPLAB_FWD_IR: switch_forward.ir.json");
    let ir: serde_json::Value =
        serde_json::from_slice(&std::fs::read(path).expect("read the IR")).expect("IR JSON");
    let prog = Arc::new(crate::program::load(&ir).expect("load the IR"));
    let mut rt = Runtime::new(prog.clone()).expect("runtime");
    let mut worker = Worker::new(&prog);
    let frames: Vec<Vec<u8>> = (1..=16).map(frame).collect();
    println!(
        "switch_forward: {}",
        ns_per_packet(&mut rt, &mut worker, &frames)
    );
}

/// CPU ns per packet of the frames sent round in port 1 (each must leave by port 2): the
/// median of 5 samples of `DPLAB_L3_PACKETS` packets (default 1M) after a warm-up.
fn ns_per_packet(rt: &mut Runtime, worker: &mut Worker, frames: &[Vec<u8>]) -> String {
    let (mut out, mut events) = (Vec::new(), Vec::new());
    let mut run = |n: usize| {
        let start = thread_cpu_ns();
        for i in 0..n {
            worker.process(
                rt,
                1,
                &frames[i % frames.len()],
                i as u64,
                &mut out,
                &mut events,
            );
            for (port, bytes) in out.drain(..) {
                assert_eq!(port, 2);
                worker.recycle(bytes);
            }
        }
        (thread_cpu_ns() - start) as f64 / n as f64
    };
    let packets = std::env::var("DPLAB_L3_PACKETS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(1_000_000);
    run(packets / 5);
    let mut samples: Vec<f64> = (0..5).map(|_| run(packets)).collect();
    samples.sort_by(f64::total_cmp);
    let all: Vec<String> = samples.iter().map(|s| format!("{s:.0}")).collect();
    format!(
        "{:.1} CPU ns/packet (median of 5 x {packets}; all {all:?})",
        samples[2]
    )
}

/// What a lone packet costs after 5 ms of idling (the 200 pps stream of the per-hop
/// latency benchmark), with cold caches and right after a rehearsal of the same frame (the
/// data-plane thread rehearses the latest packet before an expected one; every frame here
/// takes the same route). Wall nanoseconds of the `process` call, p50 of 400 packets each.
///
///     cd switch && cargo test --release l3_lone_packet_ns -- --ignored --nocapture
#[test]
#[ignore]
fn l3_lone_packet_ns() {
    let (mut rt, mut worker, frames) = l3_setup();
    let (mut out, mut events) = (Vec::new(), Vec::new());
    for rehearsed in [false, true] {
        let mut took: Vec<u128> = (0..400)
            .map(|i| {
                std::thread::sleep(std::time::Duration::from_millis(5));
                let frame = &frames[i % frames.len()];
                if rehearsed {
                    worker.rehearse(&mut rt, 1, frame, 0);
                }
                let start = std::time::Instant::now();
                worker.process(&mut rt, 1, frame, 0, &mut out, &mut events);
                let took = start.elapsed().as_nanos();
                out.drain(..).for_each(|(_, bytes)| worker.recycle(bytes));
                took
            })
            .collect();
        took.sort_unstable();
        println!(
            "switch_l3, lone packet after 5 ms idle, {}: p50 {} ns, p90 {} ns",
            if rehearsed { "rehearsed" } else { "cold" },
            took[200],
            took[360]
        );
    }
}
