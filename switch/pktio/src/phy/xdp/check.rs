//! Which interfaces take XDP frames, from the kernel's netdev netlink family.
//!
//! A frame redirected to an interface without NETDEV_XDP_ACT_NDO_XMIT in its XDP features
//! is freed without a trace: no counter moves. veth sets that feature only while its peer
//! runs NAPI (GRO on, or an XDP program on the peer), and the peer may change that at any
//! time (`ethtool -K`). So the switch asks before it sends through XDP (`dev-get`), and
//! listens to the family's "mgmt" notifications (`dev-change-ntf`, sent when an
//! interface's XDP features change): any notification makes every answer stale. As a
//! backstop (a notification not seen: turning GRO on was not noticed in a test), an answer
//! is also asked again after `FRESH_FOR`, which bounds how long frames to a peer that
//! just stopped taking XDP frames could go unseen.
//!
//! XDP frames also skip the interface's qdiscs (veth's ndo_xdp_xmit queues them straight
//! into the peer): a port the lab shapes (a TBF or netem root qdisc, any qdisc but veth's
//! default `noqueue`) would lose its rate limit and delay. So an interface with such a
//! qdisc counts as taking no XDP frames; the qdiscs of the switch's namespace are dumped
//! (RTM_GETQDISC, which notifies no one) each `FRESH_FOR`.

use std::collections::{HashMap, HashSet};
use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::time::{Duration, Instant};

use crate::sys;

/// How long an answer is used before it is asked again (one netlink round trip, ~10 µs).
const FRESH_FOR: Duration = Duration::from_millis(10);

const NETLINK_ROUTE: i32 = 0;
const NETLINK_GENERIC: i32 = 16;
const RTM_NEWQDISC: u16 = 36;
const RTM_GETQDISC: u16 = 38;
const TCA_KIND: u16 = 1;
const TC_H_ROOT: u32 = 0xffff_ffff;
const TCMSG_LEN: usize = 20;
const NLMSG_DONE: u16 = 3;
const NLM_F_DUMP: u16 = 0x300;
const SOL_NETLINK: i32 = 270;
const NETLINK_ADD_MEMBERSHIP: i32 = 1;
const GENL_ID_CTRL: u16 = 0x10;
const CTRL_CMD_GETFAMILY: u8 = 3;
const CTRL_ATTR_FAMILY_ID: u16 = 1;
const CTRL_ATTR_FAMILY_NAME: u16 = 2;
const CTRL_ATTR_MCAST_GROUPS: u16 = 7;
const CTRL_ATTR_MCAST_GRP_NAME: u16 = 1;
const CTRL_ATTR_MCAST_GRP_ID: u16 = 2;
const NETDEV_CMD_DEV_GET: u8 = 1;
const NETDEV_A_DEV_IFINDEX: u16 = 1;
const NETDEV_A_DEV_XDP_FEATURES: u16 = 3;
const NETDEV_XDP_ACT_NDO_XMIT: u64 = 4;
const NLMSG_HDRLEN: usize = 16;
const GENL_HDRLEN: usize = 4;
const NLMSG_ERROR: u16 = 2;
const NLA_F_MASK: u16 = 0x3fff; // the type bits of an attribute

/// Answers "does interface i take XDP frames now?", kept until a notification says the
/// XDP features of some interface changed.
pub struct XdpCheck {
    query: Socket,
    notes: Socket,
    route: Socket,
    family: u16,
    known: HashMap<i32, (bool, Instant)>,
    /// Interfaces with a qdisc XDP frames would skip (None: the dump failed, so any
    /// interface may have one), and when that was dumped.
    queued: (Option<HashSet<i32>>, Instant),
}

struct Socket(OwnedFd);

impl Socket {
    fn open(protocol: i32) -> io::Result<Socket> {
        let kind = libc::SOCK_RAW | libc::SOCK_CLOEXEC;
        let sock = Socket(sys::socket(libc::AF_NETLINK, kind, protocol)?);
        let timeout = libc::timeval {
            tv_sec: 1,
            tv_usec: 0,
        };
        sys::setsockopt(sock.fd(), libc::SOL_SOCKET, libc::SO_RCVTIMEO, &timeout)?;
        Ok(sock)
    }

    fn fd(&self) -> RawFd {
        self.0.as_raw_fd()
    }

    /// Sends one request (`kind`, `cmd`, attributes) and returns the reply's attributes.
    fn ask(&self, kind: u16, cmd: u8, attrs: &[u8]) -> io::Result<Vec<u8>> {
        let len = NLMSG_HDRLEN + GENL_HDRLEN + attrs.len();
        let mut msg = Vec::with_capacity(len);
        msg.extend((len as u32).to_ne_bytes());
        msg.extend(kind.to_ne_bytes());
        msg.extend((libc::NLM_F_REQUEST as u16).to_ne_bytes());
        msg.extend([0u8; 8]); // sequence number, port id
        msg.extend([cmd, 1, 0, 0]); // genl: command, version
        msg.extend(attrs);
        self.send(&msg)?;
        let reply = self.receive()?;
        let (kind, body) = messages(&reply)
            .next()
            .ok_or(io::Error::other("short netlink reply"))?;
        check_error(kind, body)?;
        Ok(body.get(GENL_HDRLEN..).unwrap_or(&[]).to_vec())
    }

    fn send(&self, msg: &[u8]) -> io::Result<()> {
        sys::send(self.fd(), msg, 0).map(|_| ())
    }

    /// One datagram: one or more netlink messages.
    fn receive(&self) -> io::Result<Vec<u8>> {
        let mut buf = vec![0u8; 1 << 16];
        let n = sys::recv(self.fd(), &mut buf, 0)?;
        buf.truncate(n);
        Ok(buf)
    }

    /// The interfaces of this namespace that have any qdisc but a root `noqueue`.
    fn queued_interfaces(&self) -> io::Result<HashSet<i32>> {
        let mut msg = Vec::with_capacity(NLMSG_HDRLEN + TCMSG_LEN);
        msg.extend(((NLMSG_HDRLEN + TCMSG_LEN) as u32).to_ne_bytes());
        msg.extend(RTM_GETQDISC.to_ne_bytes());
        msg.extend((libc::NLM_F_REQUEST as u16 | NLM_F_DUMP).to_ne_bytes());
        msg.extend([0u8; 8 + TCMSG_LEN]); // sequence number, port id; tcmsg: every interface
        self.send(&msg)?;
        let mut queued = HashSet::new();
        loop {
            let reply = self.receive()?;
            for (kind, body) in messages(&reply) {
                check_error(kind, body)?;
                if kind == NLMSG_DONE {
                    return Ok(queued);
                }
                if kind != RTM_NEWQDISC || body.len() < TCMSG_LEN {
                    continue;
                }
                let ifindex = i32::from_ne_bytes(body[4..8].try_into().unwrap());
                let parent = u32::from_ne_bytes(body[12..16].try_into().unwrap());
                let noqueue = find(&attrs(&body[TCMSG_LEN..]), TCA_KIND) == Some(b"noqueue\0");
                if !(parent == TC_H_ROOT && noqueue) {
                    queued.insert(ifindex);
                }
            }
        }
    }
}

/// Sends one rtnetlink request of `kind` (RTM_NEWLINK, ...; `flags` besides REQUEST and
/// ACK) with `body` in this network namespace and waits for its acknowledgement.
pub(super) fn route_request(kind: u16, flags: u16, body: &[u8]) -> io::Result<()> {
    let sock = Socket::open(NETLINK_ROUTE)?;
    let len = NLMSG_HDRLEN + body.len();
    let mut msg = Vec::with_capacity(len);
    msg.extend((len as u32).to_ne_bytes());
    msg.extend(kind.to_ne_bytes());
    msg.extend((libc::NLM_F_REQUEST as u16 | libc::NLM_F_ACK as u16 | flags).to_ne_bytes());
    msg.extend([0u8; 8]); // sequence number, port id
    msg.extend(body);
    sock.send(&msg)?;
    let reply = sock.receive()?;
    let answer = match messages(&reply).next() {
        Some((kind, body)) => check_error(kind, body),
        None => Err(io::Error::other("short netlink reply")),
    };
    answer
}

/// The netlink messages of a datagram, as (type, payload).
fn messages(mut bytes: &[u8]) -> impl Iterator<Item = (u16, &[u8])> {
    std::iter::from_fn(move || {
        if bytes.len() < NLMSG_HDRLEN {
            return None;
        }
        let len = u32::from_ne_bytes(bytes[..4].try_into().unwrap()) as usize;
        if len < NLMSG_HDRLEN || len > bytes.len() {
            return None;
        }
        let message = (
            u16::from_ne_bytes([bytes[4], bytes[5]]),
            &bytes[NLMSG_HDRLEN..len],
        );
        bytes = &bytes[len.next_multiple_of(4).min(bytes.len())..];
        Some(message)
    })
}

/// The error an NLMSG_ERROR message carries (none for an acknowledgement).
fn check_error(kind: u16, body: &[u8]) -> io::Result<()> {
    if kind != NLMSG_ERROR || body.len() < 4 {
        return Ok(());
    }
    match i32::from_ne_bytes(body[..4].try_into().unwrap()) {
        0 => Ok(()),
        errno => Err(io::Error::from_raw_os_error(-errno)),
    }
}

/// One netlink attribute: its type, then its payload, padded to 4 bytes.
pub(super) fn attr(kind: u16, payload: &[u8]) -> Vec<u8> {
    let mut a = Vec::new();
    a.extend(((4 + payload.len()) as u16).to_ne_bytes());
    a.extend(kind.to_ne_bytes());
    a.extend(payload);
    a.resize(a.len().next_multiple_of(4), 0);
    a
}

/// The attributes in `bytes`, as (type, payload).
fn attrs(mut bytes: &[u8]) -> Vec<(u16, &[u8])> {
    let mut out = Vec::new();
    while bytes.len() >= 4 {
        let len = u16::from_ne_bytes([bytes[0], bytes[1]]) as usize;
        if len < 4 || len > bytes.len() {
            break;
        }
        out.push((
            u16::from_ne_bytes([bytes[2], bytes[3]]) & NLA_F_MASK,
            &bytes[4..len],
        ));
        bytes = &bytes[len.next_multiple_of(4).min(bytes.len())..];
    }
    out
}

fn find<'a>(list: &[(u16, &'a [u8])], kind: u16) -> Option<&'a [u8]> {
    list.iter().find(|(k, _)| *k == kind).map(|(_, v)| *v)
}

impl XdpCheck {
    pub fn open() -> Result<XdpCheck, String> {
        let fail = |what: &str, e: io::Error| format!("netdev netlink family: {what}: {e}");
        let query = Socket::open(NETLINK_GENERIC).map_err(|e| fail("socket", e))?;
        let notes = Socket::open(NETLINK_GENERIC).map_err(|e| fail("socket", e))?;
        let route = Socket::open(NETLINK_ROUTE)
            .map_err(|e| format!("route netlink socket (qdiscs): {e}"))?;
        let reply = query
            .ask(
                GENL_ID_CTRL,
                CTRL_CMD_GETFAMILY,
                &attr(CTRL_ATTR_FAMILY_NAME, b"netdev\0"),
            )
            .map_err(|e| fail("lookup", e))?;
        let top = attrs(&reply);
        let family = find(&top, CTRL_ATTR_FAMILY_ID)
            .filter(|v| v.len() >= 2)
            .map(|v| u16::from_ne_bytes([v[0], v[1]]))
            .ok_or("netdev netlink family: no id in the reply")?;
        let groups = find(&top, CTRL_ATTR_MCAST_GROUPS).unwrap_or(&[]);
        let mgmt = attrs(groups).into_iter().find_map(|(_, group)| {
            let g = attrs(group);
            let named = find(&g, CTRL_ATTR_MCAST_GRP_NAME)? == b"mgmt\0";
            let id = find(&g, CTRL_ATTR_MCAST_GRP_ID).filter(|v| v.len() >= 4)?;
            named.then(|| u32::from_ne_bytes(id[..4].try_into().unwrap()))
        });
        let mgmt = mgmt.ok_or("netdev netlink family: no \"mgmt\" group")?;
        sys::setsockopt(notes.fd(), SOL_NETLINK, NETLINK_ADD_MEMBERSHIP, &mgmt)
            .map_err(|e| fail("joining its mgmt group", e))?;
        let queued = route
            .queued_interfaces()
            .map_err(|e| format!("dumping the qdiscs: {e}"))?;
        Ok(XdpCheck {
            query,
            notes,
            route,
            family,
            known: HashMap::new(),
            queued: (Some(queued), Instant::now()),
        })
    }

    /// Forgets every answer if a notification came since the last call (one non-blocking
    /// receive when none did).
    pub fn refresh(&mut self) {
        let mut buf = [0u8; 4096];
        let mut any = false;
        loop {
            if let Err(e) = sys::recv(self.notes.fd(), &mut buf, libc::MSG_DONTWAIT) {
                // EAGAIN: nothing more; ENOBUFS: notifications were lost, so stale too.
                any |= e.raw_os_error() == Some(libc::ENOBUFS);
                break;
            }
            any = true;
        }
        if any {
            self.known.clear();
        }
    }

    /// Whether interface `ifindex` takes XDP frames and has no qdisc they would skip
    /// (false if the kernel cannot say).
    pub fn accepts(&mut self, ifindex: i32) -> bool {
        if self.queued.1.elapsed() >= FRESH_FOR {
            self.queued = (self.route.queued_interfaces().ok(), Instant::now());
        }
        if self.queued.0.as_ref().is_none_or(|q| q.contains(&ifindex)) {
            return false;
        }
        if let Some(&(yes, asked)) = self.known.get(&ifindex) {
            if asked.elapsed() < FRESH_FOR {
                return yes;
            }
        }
        let request = attr(NETDEV_A_DEV_IFINDEX, &(ifindex as u32).to_ne_bytes());
        let features = self
            .query
            .ask(self.family, NETDEV_CMD_DEV_GET, &request)
            .ok()
            .and_then(|reply| {
                let v = find(&attrs(&reply), NETDEV_A_DEV_XDP_FEATURES)?;
                Some(u64::from_ne_bytes(v.get(..8)?.try_into().ok()?))
            });
        let yes = features.is_some_and(|f| f & NETDEV_XDP_ACT_NDO_XMIT != 0);
        self.known.insert(ifindex, (yes, Instant::now()));
        yes
    }
}
