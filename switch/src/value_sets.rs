//! Parser value sets (docs/p4-ir.md §5, P4Runtime spec "ValueSetEntry").
//!
//! A `select` case naming a value set matches when at least one of the set's members
//! matches the select keys; a member matches when each of its field matches does. Sets
//! start empty and the control plane replaces a set's members as a whole.

use crate::tables::{prefix_mask, FieldMatch, MatchKind};
use crate::values::mask;

/// A value set as the program declares it.
#[derive(Debug)]
pub struct ValueSetDef {
    pub id: u32,
    pub name: String,
    pub size: usize,
    /// (match kind, width) per field, in select-key order.
    pub fields: Vec<(MatchKind, u32)>,
}

/// Why a set of members was refused (P4Runtime codes in `code()`).
#[derive(Debug, PartialEq)]
pub enum MemberError {
    /// More members than the set's size.
    TooMany { size: usize, got: usize },
    /// The same member twice.
    Duplicate(usize),
    /// A member that does not fit the set's fields.
    Invalid(String),
}

impl MemberError {
    pub fn code(&self) -> &'static str {
        match self {
            MemberError::TooMany { .. } => "RESOURCE_EXHAUSTED",
            MemberError::Duplicate(_) => "ALREADY_EXISTS",
            MemberError::Invalid(_) => "INVALID_ARGUMENT",
        }
    }
}

impl std::fmt::Display for MemberError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MemberError::TooMany { size, got } => {
                write!(f, "{got} members, the value set holds at most {size}")
            }
            MemberError::Duplicate(i) => write!(f, "member {i} is given twice"),
            MemberError::Invalid(why) => f.write_str(why),
        }
    }
}

/// The members of one value set, as written; a packet matches them as table entries match
/// keys.
pub struct ValueSet {
    /// The set's field widths (an lpm member matches on its prefix of the field).
    widths: Vec<u32>,
    members: Vec<Vec<FieldMatch>>,
}

impl ValueSet {
    /// An empty set of the declared fields.
    pub fn new(def: &ValueSetDef) -> ValueSet {
        ValueSet {
            widths: def.fields.iter().map(|&(_, w)| w).collect(),
            members: Vec::new(),
        }
    }

    pub fn members(&self) -> &[Vec<FieldMatch>] {
        &self.members
    }

    /// Whether any member matches `key` (one value per field).
    pub fn contains(&self, key: &[u128]) -> bool {
        self.members.iter().any(|member| {
            member
                .iter()
                .zip(&self.widths)
                .zip(key)
                .all(|((m, &w), &k)| m.matches(k, w))
        })
    }

    /// Replaces all members; a refused request leaves the set as it was.
    pub fn replace(
        &mut self,
        def: &ValueSetDef,
        members: Vec<Vec<FieldMatch>>,
    ) -> Result<(), MemberError> {
        if members.len() > def.size {
            return Err(MemberError::TooMany {
                size: def.size,
                got: members.len(),
            });
        }
        for (i, member) in members.iter().enumerate() {
            if members[..i].contains(member) {
                return Err(MemberError::Duplicate(i));
            }
            check_member(def, member, i)?;
        }
        self.members = members;
        Ok(())
    }
}

/// Checks one member against the set's fields: each match of the field's kind, within
/// its width, with no value bits outside its mask or prefix.
fn check_member(def: &ValueSetDef, member: &[FieldMatch], index: usize) -> Result<(), MemberError> {
    if member.len() != def.fields.len() {
        return Err(MemberError::Invalid(format!(
            "member {index} has {} field matches, the value set {} fields",
            member.len(),
            def.fields.len()
        )));
    }
    for (f, (m, &(kind, w))) in member.iter().zip(&def.fields).enumerate() {
        let fits = |v: u128| v & !mask(w) == 0;
        let bad = |why: &str| {
            MemberError::Invalid(format!(
                "member {index} field {}: {why} (a {kind:?} field of {w} bits)",
                f + 1
            ))
        };
        match (kind, *m) {
            (MatchKind::Exact | MatchKind::Optional, FieldMatch::Exact(v)) if fits(v) => {}
            (
                MatchKind::Optional | MatchKind::Ternary | MatchKind::Lpm | MatchKind::Range,
                FieldMatch::Any,
            ) => {}
            (MatchKind::Ternary, FieldMatch::Ternary(v, m)) if fits(v) && fits(m) => {
                if v & !m != 0 {
                    return Err(bad("value bits outside the mask"));
                }
            }
            (MatchKind::Lpm, FieldMatch::Lpm(v, len)) if fits(v) && len <= w => {
                if v & !prefix_mask(w, len) != 0 {
                    return Err(bad("value bits beyond the prefix"));
                }
            }
            (MatchKind::Range, FieldMatch::Range(lo, hi)) if fits(lo) && fits(hi) && lo <= hi => {}
            _ => return Err(bad("this match does not fit")),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn def(size: usize, fields: Vec<(MatchKind, u32)>) -> ValueSetDef {
        ValueSetDef {
            id: 1,
            name: "vs".into(),
            size,
            fields,
        }
    }

    #[test]
    fn members_match_any_of_them_and_replace_as_a_whole() {
        let d = def(2, vec![(MatchKind::Exact, 16), (MatchKind::Ternary, 8)]);
        let mut set = ValueSet::new(&d);
        assert!(!set.contains(&[0x800, 1]));
        let members = vec![
            vec![FieldMatch::Exact(0x800), FieldMatch::Any],
            vec![FieldMatch::Exact(0x86dd), FieldMatch::Ternary(0x10, 0xf0)],
        ];
        set.replace(&d, members).unwrap();
        assert!(set.contains(&[0x800, 7]));
        assert!(set.contains(&[0x86dd, 0x1f]));
        assert!(!set.contains(&[0x86dd, 0x20]));
        set.replace(&d, Vec::new()).unwrap();
        assert!(!set.contains(&[0x800, 7]));
    }

    #[test]
    fn refused_members_leave_the_set_unchanged() {
        let d = def(2, vec![(MatchKind::Exact, 16)]);
        let mut set = ValueSet::new(&d);
        set.replace(&d, vec![vec![FieldMatch::Exact(1)]]).unwrap();
        let three = vec![vec![FieldMatch::Exact(2)]; 3];
        assert_eq!(
            set.replace(&d, three).unwrap_err().code(),
            "RESOURCE_EXHAUSTED"
        );
        let twice = vec![vec![FieldMatch::Exact(2)]; 2];
        assert_eq!(set.replace(&d, twice).unwrap_err().code(), "ALREADY_EXISTS");
        let wide = vec![vec![FieldMatch::Exact(0x10000)]];
        assert_eq!(
            set.replace(&d, wide).unwrap_err().code(),
            "INVALID_ARGUMENT"
        );
        let wildcard = vec![vec![FieldMatch::Any]];
        assert_eq!(
            set.replace(&d, wildcard).unwrap_err().code(),
            "INVALID_ARGUMENT"
        );
        assert!(set.contains(&[1]) && !set.contains(&[2]));
    }
}
