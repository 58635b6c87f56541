//! dplab-switch: a P4 (v1model) software switch for dplab.
//!
//! usage: dplab-switch --port 1=s1-eth1 [--port 2=s1-eth2 ...] --cpu-port 255
//!                     --control /run/dplab/<run>/s1.sock [--pipeline prog.ir.json] [--core N]
//!                     [--warm-loopback on|off] [--tx ring|xdp] [--xdp-min-call N]
//!                     [--rx-frames N]

// Unsafe code lives in pktio::sys; the exceptions (the counting allocator, heap.rs, and the
// deparser's unchecked reads, values.rs) say why they need it.
#![deny(unsafe_code)]

mod control;
mod dataplane;
mod fasthash;
mod hashes;
// A global allocator is unsafe to implement by nature; the rest of the switch is safe code.
#[allow(unsafe_code)]
mod heap;
mod ir;
mod liveness;
mod meters;
mod pipeline;
mod pre;
mod profiles;
mod program;
mod shared;
mod tables;
mod value_sets;
mod values;

use pktio::phy::port::{self, Port};
use pktio::phy::rx::{self, Interface, Receiver};
use pktio::phy::xdp::bpf;
use pktio::phy::xdp::tx::{self as xdptx, XdpTx};
use pktio::sys;
use std::os::unix::net::UnixListener;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Counted, so that `stats` can report the live heap (heap.rs).
#[global_allocator]
static ALLOCATOR: heap::CountingAllocator = heap::CountingAllocator;

struct Options {
    ports: Vec<(u32, String)>,
    cpu_port: u32,
    control: PathBuf,
    pipeline: Option<PathBuf>,
    core: Option<usize>,
    /// The namespace is the switch's own: its loopback may carry warm-up frames.
    warm_loopback: bool,
    /// Transmit through XDP (pktio phy/xdp/tx.rs) rather than the AF_PACKET ring.
    tx_xdp: bool,
    /// With `tx_xdp`: the fewest frames of a port sent in one XDP call (pktio phy/xdp/tx.rs).
    xdp_min_call: usize,
    /// The receive ring's depth (pktio phy/rx.rs `RX_FRAMES`).
    rx_frames: usize,
}

fn parse_args(args: &[String]) -> Result<Options, String> {
    let mut opts = Options {
        ports: Vec::new(),
        cpu_port: 255,
        control: PathBuf::new(),
        pipeline: None,
        core: None,
        warm_loopback: false,
        tx_xdp: false,
        xdp_min_call: xdptx::MIN_CALL,
        rx_frames: rx::RX_FRAMES,
    };
    let mut i = 0;
    while i < args.len() {
        let flag = args[i].as_str();
        let value = args
            .get(i + 1)
            .ok_or_else(|| format!("{flag} needs a value"))?;
        match flag {
            "--port" => {
                let (num, name) = value
                    .split_once('=')
                    .ok_or_else(|| format!("--port {value}: expected N=IFNAME"))?;
                let num: u32 = num
                    .parse()
                    .map_err(|_| format!("--port {value}: {num:?} is not a port number"))?;
                // 511 is v1model's drop port; 0 is a data port as in BMv2, where programs
                // (p4c's tests among them) expect packets on `ingress_port == 0`.
                if num >= 511 {
                    return Err(format!("--port {value}: port numbers are 0..510"));
                }
                if opts.ports.iter().any(|(n, _)| *n == num) {
                    return Err(format!("--port {value}: port {num} given twice"));
                }
                opts.ports.push((num, name.to_string()));
            }
            "--cpu-port" => {
                opts.cpu_port = value
                    .parse()
                    .map_err(|_| format!("--cpu-port {value}: not a number"))?;
                if opts.cpu_port >= 511 {
                    return Err("--cpu-port must be below 511 (511 means drop)".into());
                }
            }
            "--control" => opts.control = PathBuf::from(value),
            "--pipeline" => opts.pipeline = Some(PathBuf::from(value)),
            "--core" => {
                opts.core = Some(
                    value
                        .parse()
                        .map_err(|_| format!("--core {value}: not a number"))?,
                )
            }
            "--warm-loopback" => {
                opts.warm_loopback = match value.as_str() {
                    "on" => true,
                    "off" => false,
                    _ => return Err(format!("--warm-loopback {value}: expected on or off")),
                }
            }
            "--tx" => {
                opts.tx_xdp = match value.as_str() {
                    "xdp" => true,
                    "ring" => false,
                    _ => return Err(format!("--tx {value}: expected ring or xdp")),
                }
            }
            "--xdp-min-call" => {
                opts.xdp_min_call = value
                    .parse()
                    .ok()
                    .filter(|n| (1..=xdptx::MAX_FRAMES).contains(n))
                    .ok_or(format!(
                        "--xdp-min-call {value}: expected a number from 1 to {}",
                        xdptx::MAX_FRAMES
                    ))?
            }
            "--rx-frames" => {
                opts.rx_frames = value
                    .parse()
                    .ok()
                    .filter(|n| (rx::MIN_RX_FRAMES..=rx::MAX_RX_FRAMES).contains(n))
                    .ok_or(format!(
                        "--rx-frames {value}: expected a number from {} to {}",
                        rx::MIN_RX_FRAMES,
                        rx::MAX_RX_FRAMES
                    ))?
            }
            other => return Err(format!("unknown option {other}")),
        }
        i += 2;
    }
    if opts.control.as_os_str().is_empty() {
        return Err("--control PATH (the control socket) is required".into());
    }
    if opts.ports.iter().any(|(n, _)| *n == opts.cpu_port) {
        return Err(format!("port {} is the CPU port", opts.cpu_port));
    }
    Ok(opts)
}

/// SIGTERM and SIGINT, blocked in every thread: the main thread takes them with sigwait,
/// so stopping needs no handler and no polling.
fn stop_signals() -> sys::SignalSet {
    sys::SignalSet::new(&[libc::SIGTERM, libc::SIGINT])
}

fn fail(message: &str) -> ! {
    eprintln!("dplab-switch: {message}");
    std::process::exit(2);
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let opts = parse_args(&args).unwrap_or_else(|e| fail(&e));
    let xdp = opts
        .ports
        .first()
        .filter(|_| opts.tx_xdp)
        .map(|(_, first)| {
            XdpTx::open(&bpf::holder_name(first), opts.xdp_min_call)
                .unwrap_or_else(|e| fail(&format!("--tx xdp: {e}")))
        });
    // Ports read veth's XDP count only where the switch's tracepoint does not count.
    let port_xdp = match &xdp {
        None => port::Xdp::Off,
        Some(tx) if tx.counts_taken() => port::Xdp::Traced,
        Some(_) => port::Xdp::VethCount,
    };
    let receiver = open_receiver(&opts);
    let ports = open_ports(&opts, port_xdp, &receiver);
    let rx_ring = receiver
        .ring_drops()
        .map(|drops| shared::RxRing::new(receiver.frames(), drops))
        .unwrap_or_else(|e| fail(&format!("the ports' receive socket: {e}")));
    let shared = Arc::new(shared::Shared::new(
        opts.ports.clone(),
        rx_ring,
        opts.cpu_port,
    ));
    if let Some(path) = &opts.pipeline {
        let text = std::fs::read_to_string(path)
            .unwrap_or_else(|e| fail(&format!("{}: {e}", path.display())));
        let ir: serde_json::Value = serde_json::from_str(&text)
            .unwrap_or_else(|e| fail(&format!("{}: not JSON: {e}", path.display())));
        let prog = program::load(&ir).unwrap_or_else(|e| fail(&format!("{}: {e}", path.display())));
        let rt = pipeline::Runtime::new(Arc::new(prog))
            .unwrap_or_else(|e| fail(&format!("{}: {e}", path.display())));
        *shared.lock_runtime() = Some(rt);
        shared.generation.fetch_add(1, Ordering::AcqRel);
    }
    let listener = bind_control(&opts.control)
        .unwrap_or_else(|e| fail(&format!("control socket {}: {e}", opts.control.display())));
    // Before any thread starts, so that every thread inherits the blocked mask.
    let stop_set = stop_signals();
    sys::block_signals(&stop_set);
    sys::ignore_sigpipe();
    let stop = Arc::new(AtomicBool::new(false));
    {
        let (shared, stop) = (shared.clone(), stop.clone());
        std::thread::spawn(move || control::serve(shared, listener, stop));
    }
    {
        let shared = shared.clone();
        std::thread::spawn(move || control::event_writer(shared));
    }
    let dp = {
        let (shared, stop) = (shared.clone(), stop.clone());
        let (core, warm_loopback) = (opts.core, opts.warm_loopback);
        std::thread::spawn(move || {
            if let Some(c) = core {
                dataplane::set_affinity(&[c]);
            }
            dataplane::run(shared, receiver, ports, xdp, stop, warm_loopback)
        })
    };
    eprintln!(
        "dplab-switch: {} ports, cpu port {}, control {}",
        opts.ports.len(),
        opts.cpu_port,
        opts.control.display()
    );
    sys::wait_signal(&stop_set);
    stop.store(true, Ordering::Relaxed);
    shared::signal(shared.wake_dataplane); // out of its idle wait now, not at its timeout
    let _ = dp.join();
    let _ = std::fs::remove_file(&opts.control);
}

/// One receive socket and ring for every port (pktio phy/rx.rs): one ring's memory and one
/// socket's set-up, instead of one of each per port.
fn open_receiver(opts: &Options) -> Receiver {
    let interfaces: Vec<Interface> = opts
        .ports
        .iter()
        .map(|(num, name)| Interface {
            name,
            ifindex: port::interface_index(*num, name).unwrap_or_else(|e| fail(&e.to_string())),
        })
        .collect();
    Receiver::open_shared(&interfaces, opts.rx_frames).unwrap_or_else(|e| fail(&e.to_string()))
}

/// Every port, in port order; the first port that fails ends the switch. Each port's
/// transmit ring is set up when it first sends (pktio phy/port.rs `TxSetup`): at start the
/// ports cost no ring memory nor RCU grace period.
fn open_ports(opts: &Options, xdp: port::Xdp, receiver: &Receiver) -> Vec<Port> {
    opts.ports
        .iter()
        .map(|(num, name)| {
            let sock = receiver
                .clone_fd()
                .unwrap_or_else(|e| fail(&format!("port {num}: dup: {e}")));
            Port::open_on(*num, name, xdp, sock, port::TxSetup::OnFirstSend)
                .unwrap_or_else(|e| fail(&e.to_string()))
        })
        .collect()
}

/// Binds the control socket under a temporary name and renames it into place, so the path
/// appears only once the socket is listening: clients that wait for the file never meet
/// ECONNREFUSED in the gap between bind and listen.
fn bind_control(path: &std::path::Path) -> std::io::Result<UnixListener> {
    let mut staging = path.as_os_str().to_owned();
    staging.push(".staging");
    let staging = std::path::PathBuf::from(staging);
    let _ = std::fs::remove_file(&staging);
    let _ = std::fs::remove_file(path);
    let listener = UnixListener::bind(&staging)?;
    std::fs::rename(&staging, path)?;
    Ok(listener)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(extra: &[&str]) -> Result<Options, String> {
        let mut args = vec!["--control", "/x.sock", "--port", "1=a"];
        args.extend_from_slice(extra);
        parse_args(&args.iter().map(|a| a.to_string()).collect::<Vec<_>>())
    }

    #[test]
    fn rx_frames_defaults_to_the_full_ring_and_is_checked() {
        assert_eq!(parse(&[]).unwrap().rx_frames, rx::RX_FRAMES);
        assert_eq!(parse(&["--rx-frames", "512"]).unwrap().rx_frames, 512);
        for bad in ["0", "63", "65537", "many"] {
            let err = parse(&["--rx-frames", bad]).err().expect(bad);
            assert!(
                err.starts_with(&format!("--rx-frames {bad}: expected")),
                "{err}"
            );
        }
    }
}
