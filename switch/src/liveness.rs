//! Port liveness for watch ports (P4Runtime 9.2.2): a thread reads each port's
//! operational state (IFF_RUNNING: up with carrier; a veth whose peer is down loses it)
//! and hands the set of down ports to every action profile, whose groups then leave out
//! the members watching one of them.
//!
//! The states are read again only after the kernel announced a link change in the switch's
//! namespace (rtnetlink's RTMGRP_LINK: the same linkwatch event that sets IFF_RUNNING sends
//! it), not every POLL: an idle switch costs no system call per port and POLL, which
//! adds up with hundreds of switches on one machine. The thread still wakes every POLL to
//! hand the set to a newly loaded pipeline.

use std::collections::BTreeSet;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use crate::shared::Shared;
use pktio::sys;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};

const POLL: Duration = Duration::from_millis(50);

/// The down ports last handed to the profiles, and the pipeline generation they were
/// handed to: what `port_status` reports (one switch per process).
static APPLIED: Mutex<Option<(BTreeSet<u32>, u64)>> = Mutex::new(None);

/// The ports the loaded pipeline's selectors take as down; None until the watch thread
/// has handed them to this pipeline (within one POLL of its loading).
pub fn applied_down_ports(shared: &Shared) -> Option<BTreeSet<u32>> {
    let generation = shared.generation.load(Ordering::Acquire);
    applied()
        .as_ref()
        .filter(|(_, at)| *at == generation)
        .map(|(down, _)| down.clone())
}

fn applied() -> MutexGuard<'static, Option<(BTreeSet<u32>, u64)>> {
    APPLIED.lock().unwrap_or_else(|e| e.into_inner())
}

/// Whether the interface `name` is running (up with carrier), asked on socket `fd`. An
/// interface the kernel does not know counts as down.
fn running(fd: i32, name: &str) -> bool {
    sys::interface_flags(fd, name).is_ok_and(|flags| flags & libc::IFF_RUNNING != 0)
}

fn down_ports(fd: i32, shared: &Shared) -> BTreeSet<u32> {
    shared
        .ports
        .iter()
        .filter(|(_, name)| !running(fd, name))
        .map(|(port, _)| *port)
        .collect()
}

/// Link change notifications of this namespace, with a receive timeout of POLL; None if
/// the socket cannot be made (then the states are read every POLL).
fn link_changes() -> Option<OwnedFd> {
    const RTMGRP_LINK: u32 = 1;
    let kind = libc::SOCK_RAW | libc::SOCK_CLOEXEC;
    let sock = sys::socket(libc::AF_NETLINK, kind, libc::NETLINK_ROUTE).ok()?;
    let timeout = libc::timeval {
        tv_sec: 0,
        tv_usec: POLL.as_micros() as libc::suseconds_t,
    };
    let fd = sock.as_raw_fd();
    sys::setsockopt(fd, libc::SOL_SOCKET, libc::SO_RCVTIMEO, &timeout).ok()?;
    sys::bind_netlink(fd, RTMGRP_LINK).ok()?;
    Some(sock)
}

/// Waits up to POLL for link notifications; whether the ports' states may have changed
/// (a notification, or notifications lost to an overrun: ENOBUFS).
fn links_changed(changes: Option<&OwnedFd>, buf: &mut [u8]) -> bool {
    let Some(sock) = changes else {
        std::thread::sleep(POLL);
        return true;
    };
    let fd = sock.as_raw_fd();
    let mut changed = match sys::recv(fd, buf, 0) {
        Ok(_) => true,
        Err(e) => e.kind() != io::ErrorKind::WouldBlock && e.kind() != io::ErrorKind::Interrupted,
    };
    // Drain what else came meanwhile: one read of the states answers all of it.
    loop {
        match sys::recv(fd, buf, libc::MSG_DONTWAIT) {
            Ok(_) => changed = true,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
            Err(_) => {
                changed = true;
                break;
            }
        }
    }
    changed
}

/// Runs for the switch's life: applies the down ports when they change or a new pipeline
/// (with new, empty profiles) is loaded.
pub fn watch(shared: Arc<Shared>) {
    let Ok(socket) = sys::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) else {
        eprintln!("dplab-switch: no socket for port liveness; watch ports stay live");
        return;
    };
    let fd = socket.as_raw_fd();
    // Subscribed before the first read: a change after it is announced.
    let changes = link_changes();
    let mut buf = vec![0u8; 1 << 16];
    let mut down = down_ports(fd, &shared);
    loop {
        let now = (down.clone(), shared.generation.load(Ordering::Acquire));
        if applied().as_ref() != Some(&now) {
            if let Some(rt) = shared.lock_runtime().as_mut() {
                for profile in &mut rt.profiles {
                    profile.set_down_ports(&now.0);
                }
            }
            *applied() = Some(now);
        }
        if links_changed(changes.as_ref(), &mut buf) {
            down = down_ports(fd, &shared);
        }
    }
}
