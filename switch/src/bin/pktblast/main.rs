//! Packet source for the switch benchmarks: sends copies of one Ethernet frame out of an
//! interface, as fast as it can or at a set rate, through an AF_PACKET transmit ring
//! (PACKET_TX_RING, qdisc bypassed, one `send()` per batch), and prints what it really
//! sent as one JSON line.
//!
//! usage: dplab-pktblast --iface NAME --frame HEX --seconds S [--pps N] [--batch B]
//!                       [--method ring|xdp] [--count N]
//!
//! `--method xdp` has the kernel send the frames from an XDP program instead
//! (pktio's phy/xdp/blast.rs):
//! no socket buffer per frame, so it offers more, but on veth only into a peer that runs
//! NAPI (GRO on). Its `sent` is the interface's tx_packets delta, `not_sent` the frames
//! asked for beyond that. While it runs, a down veth pair of its own (the interface's name
//! cut to 13 characters + "x", peer + "p") holds the program, which makes each kernel call
//! cheap (blast.rs); it is deleted at the end, also after SIGINT or SIGTERM. Default batch:
//! 256 frames (ring), 4096 (xdp). With `--pps`, each call sends what the schedule owes, up
//! to a batch. With `--count`, the run ends once N frames are queued (or at `--seconds`,
//! whichever comes first): a workload that asks for a number of frames gets no more.
//!
//! The report: `sent` frames the kernel took from the ring and passed to the device,
//! `seconds` from the first frame to the last one sent, `pps` = sent / seconds,
//! `target_pps` and `rate_error` ((pps - target) / target) when `--pps` was given,
//! `not_sent` frames still refused by the device at the end, and the interface's own
//! `iface_tx_packets` / `iface_tx_dropped` counter deltas (null when unreadable; they
//! count any other traffic on the interface too), and `cpu_seconds` this process used (user +
//! system, which includes the kernel's receive work that veth runs on the sending core):
//! on a shared machine `cpu_seconds / sent` is steadier than the rate.

#![forbid(unsafe_code)]

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use pktio::phy::txring::{self, TxRing};
use pktio::phy::xdp::{blast as xdp, bpf};
use pktio::sys;

const FRAME_SIZE: usize = 2048;
const FRAME_COUNT: usize = 4096;
/// How long to keep offering frames the device refuses after the run's time is up.
const DRAIN: Duration = Duration::from_millis(200);

struct Options {
    iface: String,
    frame: Vec<u8>,
    seconds: f64,
    pps: f64,
    batch: usize,
    method: Method,
    /// Frames to queue at most (u64::MAX: no limit but the time).
    count: u64,
}

#[derive(Clone, Copy, PartialEq)]
enum Method {
    Ring,
    Xdp,
}

fn parse_hex(text: &str) -> Result<Vec<u8>, String> {
    if !text.len().is_multiple_of(2) {
        return Err("--frame: odd number of hex digits".into());
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).map_err(|e| format!("--frame: {e}")))
        .collect()
}

fn parse_args() -> Result<Options, String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut opts = Options {
        iface: String::new(),
        frame: Vec::new(),
        seconds: 1.0,
        pps: 0.0,
        batch: 0,
        method: Method::Ring,
        count: u64::MAX,
    };
    let mut i = 0;
    while i < args.len() {
        let value = args
            .get(i + 1)
            .ok_or(format!("{} needs a value", args[i]))?;
        match args[i].as_str() {
            "--iface" => opts.iface = value.clone(),
            "--frame" => opts.frame = parse_hex(value)?,
            "--seconds" => opts.seconds = value.parse().map_err(|_| "--seconds: not a number")?,
            "--pps" => opts.pps = value.parse().map_err(|_| "--pps: not a number")?,
            "--batch" => opts.batch = value.parse().map_err(|_| "--batch: not a number")?,
            "--count" => opts.count = value.parse().map_err(|_| "--count: not a count")?,
            "--method" => {
                opts.method = match value.as_str() {
                    "ring" => Method::Ring,
                    "xdp" => Method::Xdp,
                    other => return Err(format!("--method {other}: expected ring or xdp")),
                }
            }
            other => return Err(format!("unknown option {other}")),
        }
        i += 2;
    }
    if opts.iface.is_empty() || opts.frame.len() < 14 {
        return Err("need --iface and a --frame of at least 14 bytes".into());
    }
    let valid = opts.seconds.is_finite() && opts.seconds > 0.0;
    if !valid || !opts.pps.is_finite() || opts.pps < 0.0 || opts.count == 0 {
        return Err("--seconds must be > 0, --pps >= 0 and --count > 0".into());
    }
    // A ring batch must leave room in the ring. An XDP call has a setup cost of its own:
    // 4096 frames amortise it while a set rate's bursts stay short (~4 ms at 1 Mpps).
    let most = match opts.method {
        Method::Ring => FRAME_COUNT / 2,
        Method::Xdp => 1 << 24,
    };
    if opts.batch == 0 {
        opts.batch = match opts.method {
            Method::Ring => 256,
            Method::Xdp => 4096,
        };
    }
    opts.batch = opts.batch.clamp(1, most);
    Ok(opts)
}

/// A bound AF_PACKET socket with a mapped transmit ring.
fn open_ring(iface: &str) -> Result<TxRing, String> {
    txring::open(bpf::interface_index(iface)?, FRAME_SIZE, FRAME_COUNT, true)
        .map_err(|e| e.to_string())
}

/// One of the interface's statistics counters (sysfs of this network namespace).
fn iface_counter(iface: &str, name: &str) -> Option<u64> {
    let path = format!("/sys/class/net/{iface}/statistics/{name}");
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

#[derive(Default)]
struct Tally {
    queued: u64,
    sent: u64,
    not_sent: u64,
    send_calls: u64,
    refused_calls: u64,
}

impl Tally {
    fn flush(&mut self, ring: &mut TxRing) -> Result<(), String> {
        let f = ring.flush();
        self.send_calls += 1;
        self.sent += f.sent as u64;
        if f.waiting > 0 {
            self.refused_calls += 1;
        }
        match f.error {
            Some(e) => Err(format!("send: {e}")),
            None => Ok(()),
        }
    }
}

/// Set by SIGINT / SIGTERM: the run ends early, and still cleans up and reports.
static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_stop_signal(_: libc::c_int) {
    STOP.store(true, Ordering::Relaxed);
}

fn stop_on_signals() {
    sys::on_signals(&[libc::SIGINT, libc::SIGTERM], on_stop_signal);
}

/// Whether the run should go on sending: its time is not up, its count not reached and no
/// one asked it to stop.
fn sending(opts: &Options, end: Instant, queued: u64) -> bool {
    queued < opts.count && Instant::now() < end && !STOP.load(Ordering::Relaxed)
}

/// Frames to queue now: a batch, or (with a rate) what the schedule since `start` is owed;
/// never beyond `--count`.
fn frames_due(opts: &Options, start: Instant, queued: u64) -> usize {
    let left = opts.count.saturating_sub(queued).min(opts.batch as u64) as usize;
    if opts.pps == 0.0 {
        return left;
    }
    // Pace against the schedule since the start, so rounding errors do not accumulate.
    let due = (start.elapsed().as_secs_f64() * opts.pps) as u64;
    (due.saturating_sub(queued) as usize).min(left)
}

fn blast(opts: &Options, ring: &mut TxRing) -> Result<(Tally, f64), String> {
    let mut tally = Tally::default();
    let start = Instant::now();
    let end = start + Duration::from_secs_f64(opts.seconds);
    while sending(opts, end, tally.queued) {
        let want = frames_due(opts, start, tally.queued);
        if want == 0 {
            std::hint::spin_loop();
            continue;
        }
        for _ in 0..want {
            let Some(data) = ring.free_frame() else { break };
            data[..opts.frame.len()].copy_from_slice(&opts.frame);
            ring.queue(opts.frame.len());
            tally.queued += 1;
        }
        tally.flush(ring)?;
    }
    let drain_until = Instant::now() + DRAIN;
    while tally.sent < tally.queued && Instant::now() < drain_until {
        tally.flush(ring)?;
    }
    tally.not_sent = ring.reclaim() as u64;
    Ok((tally, start.elapsed().as_secs_f64()))
}

/// Sends through the XDP program: frames are counted by the interface afterwards.
fn blast_xdp(opts: &Options, prog: &bpf::Fd) -> Result<(Tally, f64), String> {
    let mut tally = Tally::default();
    let start = Instant::now();
    let end = start + Duration::from_secs_f64(opts.seconds);
    while sending(opts, end, tally.queued) {
        let mut want = frames_due(opts, start, tally.queued);
        if opts.pps == 0.0 && tally.queued > 0 {
            // Unpaced: size the call to the time left at the rate so far, so the run
            // ends on time despite batches of up to a million frames.
            let rate = tally.queued as f64 / start.elapsed().as_secs_f64();
            let left = (end - Instant::now()).as_secs_f64();
            let remaining = opts.count.saturating_sub(tally.queued);
            want = want
                .min((rate * left) as usize)
                .max(256)
                .min(remaining as usize);
        }
        if want == 0 {
            std::hint::spin_loop();
            continue;
        }
        match xdp::send(prog, &opts.frame, want as u32) {
            Ok(()) => tally.queued += want as u64,
            // A signal cut the call short: the interface's counter says what went out.
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(format!("XDP send: {e}")),
        }
        tally.send_calls += 1;
    }
    Ok((tally, start.elapsed().as_secs_f64()))
}

fn run(opts: &Options) -> Result<(Tally, f64), String> {
    match opts.method {
        Method::Ring => {
            let mut ring = open_ring(&opts.iface)?;
            if opts.frame.len() > ring.max_packet() {
                return Err(format!("frame longer than {} bytes", ring.max_packet()));
            }
            blast(opts, &mut ring)
        }
        Method::Xdp => {
            let prog = xdp::load_redirect(bpf::interface_index(&opts.iface)?)
                .map_err(|e| format!("loading the XDP program: {e}"))?;
            let _holder = bpf::Holder::new(&bpf::holder_name(&opts.iface), prog.raw())?;
            blast_xdp(opts, &prog)
        }
    }
}

/// User + system CPU time this process has used so far.
fn cpu_seconds() -> f64 {
    sys::cpu_seconds()
}

struct Counters {
    iface_tx: Option<u64>,
    iface_dropped: Option<u64>,
    cpu_seconds: f64,
}

fn report(opts: &Options, tally: &Tally, seconds: f64, c: &Counters) {
    let pps = tally.sent as f64 / seconds;
    let json_opt = |v: Option<f64>| v.map_or("null".to_string(), |x| format!("{x:.6}"));
    let target = (opts.pps > 0.0).then_some(opts.pps);
    let error = target.map(|t| (pps - t) / t);
    let count = |v: Option<u64>| v.map_or("null".to_string(), |x| x.to_string());
    println!(
        "{{\"method\": \"{}\", \"sent\": {}, \"seconds\": {seconds:.6}, \"pps\": {pps:.1}, \
         \"target_pps\": {}, \"rate_error\": {}, \"not_sent\": {}, \"batch\": {}, \
         \"send_calls\": {}, \"refused_calls\": {}, \"iface_tx_packets\": {}, \
         \"iface_tx_dropped\": {}, \"cpu_seconds\": {:.3}}}",
        if opts.method == Method::Xdp {
            "xdp"
        } else {
            "tx_ring"
        },
        tally.sent,
        json_opt(target),
        json_opt(error),
        tally.not_sent,
        opts.batch,
        tally.send_calls,
        tally.refused_calls,
        count(c.iface_tx),
        count(c.iface_dropped),
        c.cpu_seconds,
    );
}

fn main() {
    let opts = parse_args().unwrap_or_else(|e| {
        eprintln!("dplab-pktblast: {e}");
        std::process::exit(2);
    });
    let fail = |e: String| -> ! {
        eprintln!("dplab-pktblast: {}: {e}", opts.iface);
        std::process::exit(1);
    };
    stop_on_signals();
    let tx_before = iface_counter(&opts.iface, "tx_packets");
    let dropped_before = iface_counter(&opts.iface, "tx_dropped");
    let cpu_before = cpu_seconds();
    let (mut tally, seconds) = run(&opts).unwrap_or_else(|e| fail(e));
    let delta = |after: Option<u64>, before: Option<u64>| Some(after?.wrapping_sub(before?));
    let counters = Counters {
        iface_tx: delta(iface_counter(&opts.iface, "tx_packets"), tx_before),
        iface_dropped: delta(iface_counter(&opts.iface, "tx_dropped"), dropped_before),
        cpu_seconds: cpu_seconds() - cpu_before,
    };
    if opts.method == Method::Xdp {
        let unreadable =
            || fail("its tx counters are unreadable, so what was sent is unknown".into());
        tally.sent = counters.iface_tx.unwrap_or_else(unreadable);
        // Frames asked for that the interface did not count (veth does not count them
        // all as tx_dropped).
        tally.not_sent = tally.queued.saturating_sub(tally.sent);
    }
    report(&opts, &tally, seconds, &counters);
}
