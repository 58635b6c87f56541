//! Packet replication engine: multicast groups and clone sessions.

use std::collections::HashMap;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Replica {
    pub port: u32,
    pub rid: u32,
}

#[derive(Clone, Debug, Default)]
pub struct CloneSession {
    pub replicas: Vec<Replica>,
    pub class_of_service: u32,
    /// Truncate clones to this many bytes (0: whole packet).
    pub packet_length_bytes: u32,
}

#[derive(Default)]
pub struct Pre {
    pub groups: HashMap<u32, Vec<Replica>>,
    pub clone_sessions: HashMap<u32, CloneSession>,
}
