//! Match-action table storage and lookup.
//!
//! The lookup structure follows the table's key kinds: all-exact tables use one hash map;
//! exact + a single lpm key use one hash map per prefix length, probed longest first;
//! everything else (ternary, range, optional, several lpm keys) scans a list sorted by
//! priority. Entries live in a slab so lookups return a stable slot number.

use crate::fasthash::FastMap;
use crate::meters::MeterCell;
use crate::values::mask;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MatchKind {
    Exact,
    Lpm,
    Ternary,
    Range,
    Optional,
}

impl MatchKind {
    pub fn parse(text: &str) -> Option<MatchKind> {
        Some(match text {
            "exact" => MatchKind::Exact,
            "lpm" => MatchKind::Lpm,
            "ternary" => MatchKind::Ternary,
            "range" => MatchKind::Range,
            "optional" => MatchKind::Optional,
            _ => return None,
        })
    }
}

/// One key field's match in an entry, normalised (value bits outside the mask cleared).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FieldMatch {
    Exact(u128),
    Lpm(u128, u32),
    Ternary(u128, u128),
    Range(u128, u128),
    /// Optional key left out of the entry, or ternary with mask 0: matches anything.
    Any,
}

impl FieldMatch {
    pub fn matches(&self, value: u128, width: u32) -> bool {
        match *self {
            FieldMatch::Exact(v) => value == v,
            FieldMatch::Lpm(v, len) => value & prefix_mask(width, len) == v,
            FieldMatch::Ternary(v, m) => value & m == v,
            FieldMatch::Range(lo, hi) => lo <= value && value <= hi,
            FieldMatch::Any => true,
        }
    }
}

/// Mask of the top `len` bits of a `width`-bit field.
pub fn prefix_mask(width: u32, len: u32) -> u128 {
    if len == 0 {
        0
    } else {
        mask(width) & !mask(width - len.min(width))
    }
}

/// The hash-map index of a table of exact keys and at most one lpm key: key values (the
/// lpm key masked to its prefix) → entry slot. `K` is `u128` for a one-field key (most
/// tables: hashed and compared as one value, no key copied per lookup), else the values.
struct KeyIndex<K> {
    exact: FastMap<K, usize>,
    /// (prefix length, map), longest prefix first.
    lpm: Vec<(u32, FastMap<K, usize>)>,
}

impl<K: std::hash::Hash + Eq> KeyIndex<K> {
    fn new() -> KeyIndex<K> {
        KeyIndex {
            exact: FastMap::default(),
            lpm: Vec::new(),
        }
    }

    /// `prefix`: the lpm key's prefix length, None in an all-exact table.
    fn insert(&mut self, prefix: Option<u32>, key: K, slot: usize) {
        let Some(len) = prefix else {
            self.exact.insert(key, slot);
            return;
        };
        match self.lpm.iter().position(|(l, _)| *l <= len) {
            Some(i) if self.lpm[i].0 == len => {
                self.lpm[i].1.insert(key, slot);
            }
            Some(i) => self.lpm.insert(i, (len, FastMap::from_iter([(key, slot)]))),
            None => self.lpm.push((len, FastMap::from_iter([(key, slot)]))),
        }
    }

    fn remove(&mut self, prefix: Option<u32>, key: &K) {
        let Some(len) = prefix else {
            self.exact.remove(key);
            return;
        };
        if let Some(i) = self.lpm.iter().position(|(l, _)| *l == len) {
            self.lpm[i].1.remove(key);
            if self.lpm[i].1.is_empty() {
                self.lpm.remove(i);
            }
        }
    }

    fn clear(&mut self) {
        self.exact.clear();
        self.lpm.clear();
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct ActionCall {
    pub action: usize,
    pub params: Vec<u128>,
}

/// What an entry runs: an action of its own, or (in a table with an action profile or
/// selector) a profile member or a group of members, named by their control-plane ids.
#[derive(Clone, Debug, PartialEq)]
pub enum EntryAction {
    Direct(ActionCall),
    Member(u32),
    Group(u32),
}

/// What an entry (or a table's default entry) carries besides its action: the direct
/// counter, counting every packet the entry takes, and the direct meter (used when the
/// table has one).
#[derive(Clone, Debug, Default)]
pub struct Direct {
    pub packets: u64,
    pub bytes: u64,
    pub meter: MeterCell,
}

pub struct Entry {
    pub matches: Vec<FieldMatch>,
    pub priority: i32,
    pub action: EntryAction,
    pub direct: Direct,
    /// A `const` entry of the program (`const entries`, or marked `const` in `entries`):
    /// only its direct counter and meter may change.
    pub is_const: bool,
    pub idle_timeout_ns: u64,
    pub last_hit_ns: u64,
    /// The control plane's opaque bytes for this entry (`meta`, switch/PROTOCOL.md): kept
    /// and read back, never used by the data plane.
    pub meta: Box<[u8]>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    AllExact,
    ExactWithLpm(usize),
    List,
}

pub struct Table {
    pub kinds: Vec<MatchKind>,
    pub widths: Vec<u32>,
    pub layout: Layout,
    pub max_size: usize,
    pub default_action: ActionCall,
    /// The default entry's direct counter and meter, which count the misses.
    pub default_direct: Direct,
    /// The default entry's opaque control-plane bytes (as `Entry::meta`).
    pub default_meta: Box<[u8]>,
    slab: Vec<Option<Entry>>,
    free: Vec<usize>,
    identity: FastMap<(Vec<FieldMatch>, i32), usize>,
    /// The hash-map layouts' index: `one` for a one-field key, else `many`.
    one: KeyIndex<u128>,
    many: KeyIndex<Box<[u128]>>,
    list: Vec<usize>,
}

#[derive(Debug, PartialEq)]
pub enum TableError {
    KeyCount { expected: usize, got: usize },
    KindMismatch { field: usize, expected: MatchKind },
    Exists,
    NotFound,
    Full,
}

impl std::fmt::Display for TableError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TableError::KeyCount { expected, got } => {
                write!(f, "entry has {got} key fields, table has {expected}")
            }
            TableError::KindMismatch { field, expected } => {
                write!(f, "key field {field} must be matched as {expected:?}")
            }
            TableError::Exists => write!(f, "an entry with this match and priority exists"),
            TableError::NotFound => write!(f, "no entry with this match and priority"),
            TableError::Full => write!(f, "table is full"),
        }
    }
}

impl Table {
    pub fn new(
        kinds: Vec<MatchKind>,
        widths: Vec<u32>,
        max_size: usize,
        default_action: ActionCall,
    ) -> Table {
        let lpm_count = kinds.iter().filter(|k| **k == MatchKind::Lpm).count();
        let others = kinds
            .iter()
            .filter(|k| !matches!(k, MatchKind::Exact | MatchKind::Lpm))
            .count();
        let layout = if others == 0 && lpm_count == 0 {
            Layout::AllExact
        } else if others == 0 && lpm_count == 1 {
            Layout::ExactWithLpm(kinds.iter().position(|k| *k == MatchKind::Lpm).unwrap_or(0))
        } else {
            Layout::List
        };
        Table {
            kinds,
            widths,
            layout,
            max_size: max_size.max(1),
            default_action,
            default_direct: Direct::default(),
            default_meta: Box::default(),
            slab: Vec::new(),
            free: Vec::new(),
            identity: FastMap::default(),
            one: KeyIndex::new(),
            many: KeyIndex::new(),
            list: Vec::new(),
        }
    }

    pub fn len(&self) -> usize {
        self.identity.len()
    }

    /// Checks and normalises an entry's matches against the table's key.
    pub fn normalise(&self, matches: &[FieldMatch]) -> Result<Vec<FieldMatch>, TableError> {
        if matches.len() != self.kinds.len() {
            return Err(TableError::KeyCount {
                expected: self.kinds.len(),
                got: matches.len(),
            });
        }
        let mut out = Vec::with_capacity(matches.len());
        for (i, (m, kind)) in matches.iter().zip(&self.kinds).enumerate() {
            let w = self.widths[i];
            let full = mask(w);
            let norm = match (kind, *m) {
                (MatchKind::Exact | MatchKind::Optional, FieldMatch::Exact(v)) => {
                    FieldMatch::Exact(v & full)
                }
                (MatchKind::Optional | MatchKind::Ternary, FieldMatch::Any) => FieldMatch::Any,
                (MatchKind::Lpm, FieldMatch::Lpm(v, len)) => {
                    let len = len.min(w);
                    FieldMatch::Lpm(v & prefix_mask(w, len), len)
                }
                (MatchKind::Lpm, FieldMatch::Any) => FieldMatch::Lpm(0, 0),
                (MatchKind::Ternary, FieldMatch::Ternary(_, m)) if m & full == 0 => FieldMatch::Any,
                (MatchKind::Ternary, FieldMatch::Ternary(v, m)) => {
                    FieldMatch::Ternary(v & m & full, m & full)
                }
                (MatchKind::Ternary, FieldMatch::Exact(v)) => FieldMatch::Ternary(v & full, full),
                (MatchKind::Range, FieldMatch::Range(lo, hi)) => {
                    FieldMatch::Range(lo & full, hi & full)
                }
                (MatchKind::Range, FieldMatch::Any) => FieldMatch::Range(0, full),
                (MatchKind::Range, FieldMatch::Exact(v)) => FieldMatch::Range(v & full, v & full),
                _ => {
                    return Err(TableError::KindMismatch {
                        field: i,
                        expected: *kind,
                    })
                }
            };
            out.push(norm);
        }
        Ok(out)
    }

    fn key_priority(&self, priority: i32) -> i32 {
        // Hash-map layouts ignore priority: the match alone identifies the entry.
        match self.layout {
            Layout::List => priority,
            _ => 0,
        }
    }

    fn exact_key(&self, matches: &[FieldMatch]) -> Box<[u128]> {
        matches
            .iter()
            .map(|m| match *m {
                FieldMatch::Exact(v) | FieldMatch::Lpm(v, _) => v,
                _ => 0,
            })
            .collect()
    }

    pub fn insert(
        &mut self,
        matches: &[FieldMatch],
        priority: i32,
        entry_action: EntryAction,
    ) -> Result<usize, TableError> {
        let matches = self.normalise(matches)?;
        let priority = self.key_priority(priority);
        if self.identity.contains_key(&(matches.clone(), priority)) {
            return Err(TableError::Exists);
        }
        if self.len() >= self.max_size {
            return Err(TableError::Full);
        }
        let entry = Entry {
            matches: matches.clone(),
            priority,
            action: entry_action,
            direct: Direct::default(),
            is_const: false,
            idle_timeout_ns: 0,
            last_hit_ns: 0,
            meta: Box::default(),
        };
        let slot = match self.free.pop() {
            Some(s) => {
                self.slab[s] = Some(entry);
                s
            }
            None => {
                self.slab.push(Some(entry));
                self.slab.len() - 1
            }
        };
        self.identity.insert((matches.clone(), priority), slot);
        self.index_insert(&matches, priority, slot);
        Ok(slot)
    }

    /// The lpm key's prefix length in a hash-map layout (None: all exact).
    fn prefix(&self, matches: &[FieldMatch]) -> Option<u32> {
        match self.layout {
            Layout::ExactWithLpm(pos) => match matches[pos] {
                FieldMatch::Lpm(_, len) => Some(len),
                _ => Some(0),
            },
            _ => None,
        }
    }

    fn index_insert(&mut self, matches: &[FieldMatch], priority: i32, slot: usize) {
        match self.layout {
            Layout::AllExact | Layout::ExactWithLpm(_) => {
                let (prefix, key) = (self.prefix(matches), self.exact_key(matches));
                match *key {
                    [one] => self.one.insert(prefix, one, slot),
                    _ => self.many.insert(prefix, key, slot),
                }
            }
            Layout::List => {
                // Higher priority first; among equals the older entry stays first.
                let at = self.list.partition_point(|s| {
                    self.slab[*s].as_ref().map(|e| e.priority).unwrap_or(0) >= priority
                });
                self.list.insert(at, slot);
            }
        }
    }

    pub fn find(&self, matches: &[FieldMatch], priority: i32) -> Result<usize, TableError> {
        let matches = self.normalise(matches)?;
        let priority = self.key_priority(priority);
        self.identity
            .get(&(matches, priority))
            .copied()
            .ok_or(TableError::NotFound)
    }

    pub fn modify(
        &mut self,
        matches: &[FieldMatch],
        priority: i32,
        action: EntryAction,
    ) -> Result<(), TableError> {
        let slot = self.find(matches, priority)?;
        if let Some(e) = self.slab[slot].as_mut() {
            e.action = action;
        }
        Ok(())
    }

    pub fn delete(&mut self, matches: &[FieldMatch], priority: i32) -> Result<(), TableError> {
        let slot = self.find(matches, priority)?;
        let entry = self.slab[slot].take().ok_or(TableError::NotFound)?;
        self.identity
            .remove(&(entry.matches.clone(), entry.priority));
        match self.layout {
            Layout::AllExact | Layout::ExactWithLpm(_) => {
                let (prefix, key) = (self.prefix(&entry.matches), self.exact_key(&entry.matches));
                match *key {
                    [one] => self.one.remove(prefix, &one),
                    _ => self.many.remove(prefix, &key),
                }
            }
            Layout::List => self.list.retain(|s| *s != slot),
        }
        self.free.push(slot);
        Ok(())
    }

    pub fn clear(&mut self) {
        self.slab.clear();
        self.free.clear();
        self.identity.clear();
        self.one.clear();
        self.many.clear();
        self.list.clear();
    }

    pub fn entry(&self, slot: usize) -> Option<&Entry> {
        self.slab.get(slot).and_then(|e| e.as_ref())
    }

    pub fn entry_mut(&mut self, slot: usize) -> Option<&mut Entry> {
        self.slab.get_mut(slot).and_then(|e| e.as_mut())
    }

    pub fn entries(&self) -> impl Iterator<Item = (usize, &Entry)> {
        self.slab
            .iter()
            .enumerate()
            .filter_map(|(i, e)| e.as_ref().map(|e| (i, e)))
    }

    /// Finds the slot of the entry matching `key` (one value per key field), if any.
    /// `scratch` is reused between lookups so the data path does not allocate.
    pub fn lookup(&self, key: &[u128], scratch: &mut Vec<u128>) -> Option<usize> {
        match (self.layout, key) {
            (Layout::AllExact, [one]) => self.one.exact.get(one).copied(),
            (Layout::AllExact, _) => self.many.exact.get(key).copied(),
            (Layout::ExactWithLpm(_), [one]) => {
                let width = self.widths[0];
                self.one
                    .lpm
                    .iter()
                    .find_map(|(len, map)| map.get(&(one & prefix_mask(width, *len))).copied())
            }
            (Layout::ExactWithLpm(pos), _) => {
                scratch.clear();
                scratch.extend_from_slice(key);
                let width = self.widths[pos];
                for (len, map) in &self.many.lpm {
                    scratch[pos] = key[pos] & prefix_mask(width, *len);
                    if let Some(slot) = map.get(scratch.as_slice()) {
                        return Some(*slot);
                    }
                }
                None
            }
            (Layout::List, _) => self.list.iter().copied().find(|s| {
                self.slab[*s].as_ref().is_some_and(|e| {
                    e.matches
                        .iter()
                        .zip(key)
                        .zip(&self.widths)
                        .all(|((m, v), w)| m.matches(*v, *w))
                })
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn direct(action: usize) -> ActionCall {
        ActionCall {
            action,
            params: vec![],
        }
    }

    fn call(action: usize) -> EntryAction {
        EntryAction::Direct(direct(action))
    }

    fn table(kinds: &[MatchKind], widths: &[u32]) -> Table {
        Table::new(kinds.to_vec(), widths.to_vec(), 100, direct(0))
    }

    fn hit(t: &Table, key: &[u128]) -> Option<usize> {
        t.lookup(key, &mut Vec::new()).and_then(|s| t.action_at(s))
    }

    impl Table {
        fn action_at(&self, slot: usize) -> Option<usize> {
            self.slab
                .get(slot)
                .and_then(|e| e.as_ref())
                .and_then(|e| match &e.action {
                    EntryAction::Direct(call) => Some(call.action),
                    _ => None,
                })
        }
    }

    #[test]
    fn exact_match_and_delete() {
        let mut t = table(&[MatchKind::Exact, MatchKind::Exact], &[48, 9]);
        assert_eq!(t.layout, Layout::AllExact);
        t.insert(
            &[FieldMatch::Exact(0xaabb), FieldMatch::Exact(3)],
            0,
            call(1),
        )
        .unwrap();
        assert_eq!(hit(&t, &[0xaabb, 3]), Some(1));
        assert_eq!(hit(&t, &[0xaabb, 4]), None);
        let dup = t.insert(
            &[FieldMatch::Exact(0xaabb), FieldMatch::Exact(3)],
            0,
            call(2),
        );
        assert_eq!(dup, Err(TableError::Exists));
        t.modify(
            &[FieldMatch::Exact(0xaabb), FieldMatch::Exact(3)],
            0,
            call(2),
        )
        .unwrap();
        assert_eq!(hit(&t, &[0xaabb, 3]), Some(2));
        t.delete(&[FieldMatch::Exact(0xaabb), FieldMatch::Exact(3)], 0)
            .unwrap();
        assert_eq!(hit(&t, &[0xaabb, 3]), None);
        assert_eq!(
            t.delete(&[FieldMatch::Exact(0xaabb), FieldMatch::Exact(3)], 0),
            Err(TableError::NotFound)
        );
    }

    #[test]
    fn lpm_prefers_the_longest_prefix() {
        let mut t = table(&[MatchKind::Lpm], &[32]);
        assert_eq!(t.layout, Layout::ExactWithLpm(0));
        t.insert(&[FieldMatch::Lpm(0x0a00_0000, 8)], 0, call(1))
            .unwrap();
        t.insert(&[FieldMatch::Lpm(0x0a01_0000, 16)], 0, call(2))
            .unwrap();
        t.insert(&[FieldMatch::Lpm(0x0a01_02ff, 24)], 0, call(3))
            .unwrap(); // host bits are cleared
        t.insert(&[FieldMatch::Lpm(0, 0)], 0, call(4)).unwrap();
        assert_eq!(hit(&t, &[0x0a01_0203]), Some(3));
        assert_eq!(hit(&t, &[0x0a01_0903]), Some(2));
        assert_eq!(hit(&t, &[0x0a09_0903]), Some(1));
        assert_eq!(hit(&t, &[0x0b00_0000]), Some(4));
        t.delete(&[FieldMatch::Lpm(0x0a01_0200, 24)], 0).unwrap();
        assert_eq!(hit(&t, &[0x0a01_0203]), Some(2));
    }

    #[test]
    fn ternary_range_optional_follow_priority() {
        let kinds = [MatchKind::Ternary, MatchKind::Range, MatchKind::Optional];
        let mut t = table(&kinds, &[8, 16, 9]);
        assert_eq!(t.layout, Layout::List);
        t.insert(
            &[
                FieldMatch::Ternary(0x10, 0xf0),
                FieldMatch::Range(0, 100),
                FieldMatch::Any,
            ],
            10,
            call(1),
        )
        .unwrap();
        t.insert(
            &[
                FieldMatch::Ternary(0x12, 0xff),
                FieldMatch::Range(50, 60),
                FieldMatch::Exact(2),
            ],
            20,
            call(2),
        )
        .unwrap();
        t.insert(
            &[
                FieldMatch::Any,
                FieldMatch::Range(0, 0xffff),
                FieldMatch::Any,
            ],
            1,
            call(3),
        )
        .unwrap();
        assert_eq!(hit(&t, &[0x12, 55, 2]), Some(2));
        assert_eq!(hit(&t, &[0x12, 55, 3]), Some(1));
        assert_eq!(hit(&t, &[0x12, 61, 2]), Some(1));
        assert_eq!(hit(&t, &[0x22, 500, 2]), Some(3));
        // The same match with another priority is another entry.
        t.insert(
            &[
                FieldMatch::Any,
                FieldMatch::Range(0, 0xffff),
                FieldMatch::Any,
            ],
            30,
            call(4),
        )
        .unwrap();
        assert_eq!(hit(&t, &[0x12, 55, 2]), Some(4));
    }

    #[test]
    fn wrong_kinds_and_sizes_are_rejected() {
        let mut t = Table::new(vec![MatchKind::Exact], vec![8], 2, direct(0));
        assert_eq!(
            t.insert(&[FieldMatch::Ternary(1, 1)], 0, call(1)),
            Err(TableError::KindMismatch {
                field: 0,
                expected: MatchKind::Exact
            })
        );
        assert_eq!(
            t.insert(&[], 0, call(1)),
            Err(TableError::KeyCount {
                expected: 1,
                got: 0
            })
        );
        t.insert(&[FieldMatch::Exact(1)], 0, call(1)).unwrap();
        t.insert(&[FieldMatch::Exact(2)], 0, call(1)).unwrap();
        assert_eq!(
            t.insert(&[FieldMatch::Exact(3)], 0, call(1)),
            Err(TableError::Full)
        );
        // Values wider than the key are cut to its width.
        t.delete(&[FieldMatch::Exact(0x102)], 0).unwrap();
    }
}
