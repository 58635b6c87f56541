//! Packet source for the switch benchmarks: sends copies of one Ethernet frame out of an
//! interface as fast as it can (or at a set rate) with batched `sendmmsg` on an AF_PACKET
//! socket, and prints what it really sent as one JSON line.
//!
//! usage: dplab-pktblast --iface NAME --frame HEX --seconds S [--pps N] [--batch B]

use std::ffi::CString;
use std::time::{Duration, Instant};

struct Options {
    iface: String,
    frame: Vec<u8>,
    seconds: f64,
    pps: f64,
    batch: usize,
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
        batch: 32,
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
            other => return Err(format!("unknown option {other}")),
        }
        i += 2;
    }
    if opts.iface.is_empty() || opts.frame.len() < 14 {
        return Err("need --iface and a --frame of at least 14 bytes".into());
    }
    opts.batch = opts.batch.clamp(1, 1024);
    Ok(opts)
}

fn open_socket(iface: &str) -> Result<i32, String> {
    let cname = CString::new(iface).map_err(|_| "bad interface name")?;
    let ifindex = unsafe { libc::if_nametoindex(cname.as_ptr()) } as i32;
    if ifindex == 0 {
        return Err(format!("no interface {iface}"));
    }
    let fd = unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW, 0) };
    if fd < 0 {
        return Err(format!("socket: {}", std::io::Error::last_os_error()));
    }
    let one: libc::c_int = 1;
    let len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_PACKET,
            libc::PACKET_QDISC_BYPASS,
            &one as *const _ as *const _,
            len,
        )
    };
    let mut addr: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
    addr.sll_family = libc::AF_PACKET as u16;
    addr.sll_ifindex = ifindex;
    let alen = std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t;
    if unsafe { libc::bind(fd, &addr as *const _ as *const libc::sockaddr, alen) } != 0 {
        return Err(format!("bind: {}", std::io::Error::last_os_error()));
    }
    Ok(fd)
}

fn send_batch(fd: i32, frame: &[u8], count: usize) -> usize {
    let mut iov = libc::iovec {
        iov_base: frame.as_ptr() as *mut libc::c_void,
        iov_len: frame.len(),
    };
    let mut msgs: Vec<libc::mmsghdr> = (0..count)
        .map(|_| {
            let mut m: libc::mmsghdr = unsafe { std::mem::zeroed() };
            m.msg_hdr.msg_iov = &mut iov;
            m.msg_hdr.msg_iovlen = 1;
            m
        })
        .collect();
    let n = unsafe { libc::sendmmsg(fd, msgs.as_mut_ptr(), count as u32, 0) };
    n.max(0) as usize
}

fn main() {
    let opts = match parse_args() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("dplab-pktblast: {e}");
            std::process::exit(2);
        }
    };
    let fd = match open_socket(&opts.iface) {
        Ok(fd) => fd,
        Err(e) => {
            eprintln!("dplab-pktblast: {}: {e}", opts.iface);
            std::process::exit(1);
        }
    };
    let start = Instant::now();
    let end = start + Duration::from_secs_f64(opts.seconds);
    let mut sent: u64 = 0;
    let mut failed_calls: u64 = 0;
    loop {
        let now = Instant::now();
        if now >= end {
            break;
        }
        let mut want = opts.batch;
        if opts.pps > 0.0 {
            // Pace against the schedule since the start, so errors do not accumulate.
            let due = ((now - start).as_secs_f64() * opts.pps) as u64;
            if due <= sent {
                std::hint::spin_loop();
                continue;
            }
            want = want.min((due - sent) as usize);
        }
        let n = send_batch(fd, &opts.frame, want);
        if n == 0 {
            failed_calls += 1;
        }
        sent += n as u64;
    }
    let elapsed = start.elapsed().as_secs_f64();
    println!(
        "{{\"sent\": {sent}, \"seconds\": {elapsed:.6}, \"pps\": {:.1}, \"failed_calls\": {failed_calls}}}",
        sent as f64 / elapsed
    );
}
