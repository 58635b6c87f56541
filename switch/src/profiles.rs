//! Action profiles and selectors: members (an action with its data) and groups (weighted
//! sets of members) that entries of the tables a profile implements name instead of an
//! action. A group's member is picked by the selector's hash of the packet's selector
//! keys, each member taking as many of the group's slots as its weight.

use std::collections::BTreeMap;

use crate::tables::ActionCall;

#[derive(Clone, Debug, PartialEq)]
pub struct Group {
    /// (member id, weight) in the order the control plane gave them.
    pub members: Vec<(u32, u32)>,
    /// Sum of weights this group may reach (P4Runtime `max_size`; 0 = the profile's size).
    pub max_size: u32,
    /// One slot per unit of weight, each naming its member: the hash picks a slot.
    slots: Vec<u32>,
}

#[derive(Debug, PartialEq)]
pub enum ProfileError {
    Exists,
    NotFound(String),
    InUse(String),
    Full(String),
    Invalid(String),
}

impl std::fmt::Display for ProfileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ProfileError::Exists => write!(f, "already exists"),
            ProfileError::NotFound(m)
            | ProfileError::InUse(m)
            | ProfileError::Full(m)
            | ProfileError::Invalid(m) => write!(f, "{m}"),
        }
    }
}

/// The members and groups of one action profile or selector (ordered maps, so reads list
/// them by id).
#[derive(Default)]
pub struct Profile {
    pub members: BTreeMap<u32, ActionCall>,
    pub groups: BTreeMap<u32, Group>,
}

impl Profile {
    /// The action a member runs, if the member exists.
    pub fn member(&self, id: u32) -> Option<&ActionCall> {
        self.members.get(&id)
    }

    /// The action of the member a group's slot `hash % slots` names; None for an empty
    /// or unknown group (the table then behaves as on a miss).
    pub fn pick(&self, group: u32, hash: u64) -> Option<&ActionCall> {
        let slots = &self.groups.get(&group)?.slots;
        if slots.is_empty() {
            return None;
        }
        self.members
            .get(&slots[(hash % slots.len() as u64) as usize])
    }

    pub fn add_member(
        &mut self,
        id: u32,
        call: ActionCall,
        size: usize,
    ) -> Result<(), ProfileError> {
        if self.members.contains_key(&id) {
            return Err(ProfileError::Exists);
        }
        if self.members.len() >= size {
            return Err(ProfileError::Full(format!(
                "the profile holds at most {size} members"
            )));
        }
        self.members.insert(id, call);
        Ok(())
    }

    pub fn modify_member(&mut self, id: u32, call: ActionCall) -> Result<(), ProfileError> {
        let member = self
            .members
            .get_mut(&id)
            .ok_or_else(|| ProfileError::NotFound(format!("member {id} does not exist")))?;
        *member = call;
        Ok(())
    }

    /// Deletes a member no group holds (`used_by_entries`: whether a table entry names it).
    pub fn delete_member(&mut self, id: u32, used_by_entries: bool) -> Result<(), ProfileError> {
        if !self.members.contains_key(&id) {
            return Err(ProfileError::NotFound(format!(
                "member {id} does not exist"
            )));
        }
        if let Some((g, _)) = self
            .groups
            .iter()
            .find(|(_, g)| g.members.iter().any(|(m, _)| *m == id))
        {
            return Err(ProfileError::InUse(format!("member {id} is in group {g}")));
        }
        if used_by_entries {
            return Err(ProfileError::InUse(format!(
                "member {id} is the action of a table entry"
            )));
        }
        self.members.remove(&id);
        Ok(())
    }

    /// Creates (`insert`) or replaces a group. Its members must exist, appear once and
    /// weigh at least 1; their weights must fit `max_size` (or `limit` when it is 0).
    pub fn set_group(
        &mut self,
        id: u32,
        members: Vec<(u32, u32)>,
        max_size: u32,
        insert: bool,
        limit: u32,
    ) -> Result<(), ProfileError> {
        match (insert, self.groups.get(&id)) {
            (true, Some(_)) => return Err(ProfileError::Exists),
            (false, None) => {
                return Err(ProfileError::NotFound(format!("group {id} does not exist")))
            }
            (false, Some(old)) if old.max_size != max_size => {
                return Err(ProfileError::Invalid(format!(
                    "group {id} was made with max_size {}, it cannot change",
                    old.max_size
                )))
            }
            _ => {}
        }
        let cap = if max_size > 0 { max_size } else { limit };
        let mut slots = Vec::new();
        for (i, (member, weight)) in members.iter().enumerate() {
            if !self.members.contains_key(member) {
                return Err(ProfileError::NotFound(format!(
                    "member {member} does not exist"
                )));
            }
            if *weight == 0 {
                return Err(ProfileError::Invalid(format!("member {member}: weight 0")));
            }
            if members[..i].iter().any(|(m, _)| m == member) {
                return Err(ProfileError::Invalid(format!(
                    "member {member} is listed twice (use its weight)"
                )));
            }
            if slots.len() as u64 + *weight as u64 > cap as u64 {
                return Err(ProfileError::Full(format!(
                    "the group's weights add up to more than {cap}"
                )));
            }
            slots.extend(std::iter::repeat_n(*member, *weight as usize));
        }
        self.groups.insert(
            id,
            Group {
                members,
                max_size,
                slots,
            },
        );
        Ok(())
    }

    pub fn delete_group(&mut self, id: u32, used_by_entries: bool) -> Result<(), ProfileError> {
        if !self.groups.contains_key(&id) {
            return Err(ProfileError::NotFound(format!("group {id} does not exist")));
        }
        if used_by_entries {
            return Err(ProfileError::InUse(format!(
                "group {id} is the action of a table entry"
            )));
        }
        self.groups.remove(&id);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(port: u128) -> ActionCall {
        ActionCall {
            action: 0,
            params: vec![port],
        }
    }

    fn profile() -> Profile {
        let mut p = Profile::default();
        for id in 1..=3 {
            p.add_member(id, call(id as u128), 8).unwrap();
        }
        p
    }

    #[test]
    fn weights_take_slots_and_every_member_is_picked() {
        let mut p = profile();
        p.set_group(7, vec![(1, 1), (2, 2)], 0, true, 8).unwrap();
        let picked: Vec<u128> = (0..3).map(|h| p.pick(7, h).unwrap().params[0]).collect();
        assert_eq!(picked, vec![1, 2, 2]);
        p.set_group(8, vec![], 0, true, 8).unwrap();
        assert_eq!(p.pick(8, 5), None);
    }

    #[test]
    fn refusals_follow_the_p4runtime_rules() {
        let mut p = profile();
        assert_eq!(p.add_member(1, call(1), 8), Err(ProfileError::Exists));
        assert!(matches!(
            p.set_group(7, vec![(9, 1)], 0, true, 8),
            Err(ProfileError::NotFound(_))
        ));
        assert!(matches!(
            p.set_group(7, vec![(1, 0)], 0, true, 8),
            Err(ProfileError::Invalid(_))
        ));
        assert!(matches!(
            p.set_group(7, vec![(1, 2), (2, 2)], 3, true, 8),
            Err(ProfileError::Full(_))
        ));
        p.set_group(7, vec![(1, 1)], 3, true, 8).unwrap();
        assert!(matches!(
            p.set_group(7, vec![(1, 1)], 4, false, 8),
            Err(ProfileError::Invalid(_))
        ));
        assert!(matches!(
            p.delete_member(1, false),
            Err(ProfileError::InUse(_))
        ));
        assert!(matches!(
            p.delete_member(2, true),
            Err(ProfileError::InUse(_))
        ));
        p.delete_member(3, false).unwrap();
        p.delete_group(7, false).unwrap();
        p.delete_member(1, false).unwrap();
    }
}
