//! Action profiles and selectors: members (an action with its data) and groups (weighted
//! sets of members) that entries of the tables a profile implements name instead of an
//! action. A group's member is picked by the selector's hash of the packet's selector
//! keys, each member taking as many of the group's slots as its weight. A member may
//! watch a port: while that port is down the member takes no slots (P4Runtime 9.2.2).

use std::collections::{BTreeMap, BTreeSet};

use crate::tables::ActionCall;

/// One member of a group as the control plane gave it.
#[derive(Clone, Debug, PartialEq)]
pub struct GroupMember {
    pub member: u32,
    pub weight: u32,
    /// The port whose liveness the member follows, and whether the client named it with
    /// P4Runtime's deprecated `watch` field (read back the same way).
    pub watch: Option<(u32, bool)>,
}

impl GroupMember {
    pub fn new(member: u32, weight: u32) -> GroupMember {
        GroupMember {
            member,
            weight,
            watch: None,
        }
    }
}

/// How a group's size is counted against its `max_size` (P4Info `selector_size_semantics`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum SizeBy {
    Weights,
    Members,
}

impl SizeBy {
    /// What member `m` adds to its group's size.
    fn of(self, m: &GroupMember) -> u64 {
        match self {
            SizeBy::Weights => m.weight as u64,
            SizeBy::Members => 1,
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Group {
    /// The members in the order the control plane gave them.
    pub members: Vec<GroupMember>,
    /// Size this group may reach (P4Runtime `max_size`; 0 = the profile's size).
    pub max_size: u32,
    /// A P4Runtime server's mark: the group (and its members) realise a one-shot entry's
    /// action set. Kept here, with the group, so that it outlives the server process.
    pub one_shot: bool,
    /// One slot per unit of weight of each live member, naming it: the hash picks a slot.
    slots: Vec<u32>,
}

impl Group {
    /// Slots of the members whose watch port (if any) is not in `down`.
    fn fill_slots(&mut self, down: &BTreeSet<u32>) {
        self.slots.clear();
        for m in &self.members {
            if m.watch.is_none_or(|(port, _)| !down.contains(&port)) {
                self.slots
                    .extend(std::iter::repeat_n(m.member, m.weight as usize));
            }
        }
    }
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
    /// Ports that are down now (liveness.rs keeps it current).
    down: BTreeSet<u32>,
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

    /// Takes the ports that are down now; groups leave out members watching one of them.
    pub fn set_down_ports(&mut self, down: &BTreeSet<u32>) {
        if self.down == *down {
            return;
        }
        self.down = down.clone();
        for g in self.groups.values_mut() {
            g.fill_slots(down);
        }
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
            .find(|(_, g)| g.members.iter().any(|m| m.member == id))
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
    /// weigh at least 1; their weights (or their number, by `size_by`) must fit
    /// `max_size` (or `default_cap` when it is 0), and, added to those of the other groups,
    /// `limit`: with a selector, p4info.proto's `ActionProfile.size` is "the maximum sum
    /// of weights [or number of members, under `sum_of_members`] that can be present
    /// across all selector groups".
    pub fn set_group(
        &mut self,
        id: u32,
        members: Vec<GroupMember>,
        max_size: u32,
        insert: bool,
        (default_cap, limit, size_by): (u32, u32, SizeBy),
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
        let cap = if max_size > 0 { max_size } else { default_cap };
        let mut size = 0u64;
        for (i, m) in members.iter().enumerate() {
            let member = m.member;
            if !self.members.contains_key(&member) {
                return Err(ProfileError::NotFound(format!(
                    "member {member} does not exist"
                )));
            }
            if m.weight == 0 {
                return Err(ProfileError::Invalid(format!("member {member}: weight 0")));
            }
            if members[..i].iter().any(|o| o.member == member) {
                return Err(ProfileError::Invalid(format!(
                    "member {member} is listed twice (use its weight)"
                )));
            }
            size += size_by.of(m);
            if size > cap as u64 {
                let what = match size_by {
                    SizeBy::Weights => "weights add up to",
                    SizeBy::Members => "members number",
                };
                return Err(ProfileError::Full(format!(
                    "the group's {what} more than {cap}"
                )));
            }
        }
        let others: u64 = self
            .groups
            .iter()
            .filter(|(g, _)| **g != id)
            .flat_map(|(_, g)| &g.members)
            .map(|m| size_by.of(m))
            .sum();
        let total = others + size; // `size`: the new group's, summed above
        if total > limit as u64 {
            let what = match size_by {
                SizeBy::Weights => "weights",
                SizeBy::Members => "members",
            };
            return Err(ProfileError::Full(format!(
                "the selector's groups would hold {total} {what}, more than its size {limit}"
            )));
        }
        let one_shot = self.groups.get(&id).is_some_and(|g| g.one_shot); // a modify keeps it
        let mut group = Group {
            members,
            max_size,
            one_shot,
            slots: Vec::new(),
        };
        group.fill_slots(&self.down);
        self.groups.insert(id, group);
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

    const LIMIT: (u32, u32, SizeBy) = (8, 8, SizeBy::Weights);

    fn members(list: &[(u32, u32)]) -> Vec<GroupMember> {
        list.iter().map(|&(m, w)| GroupMember::new(m, w)).collect()
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
        p.set_group(7, members(&[(1, 1), (2, 2)]), 0, true, LIMIT)
            .unwrap();
        let picked: Vec<u128> = (0..3).map(|h| p.pick(7, h).unwrap().params[0]).collect();
        assert_eq!(picked, vec![1, 2, 2]);
        p.set_group(8, vec![], 0, true, LIMIT).unwrap();
        assert_eq!(p.pick(8, 5), None);
    }

    #[test]
    fn a_member_watching_a_down_port_takes_no_slots_until_it_is_up() {
        let mut p = profile();
        let mut list = members(&[(1, 1), (2, 1)]);
        list[1].watch = Some((4, false));
        p.set_group(7, list, 0, true, LIMIT).unwrap();
        p.set_down_ports(&BTreeSet::from([4]));
        let picked: Vec<u128> = (0..4).map(|h| p.pick(7, h).unwrap().params[0]).collect();
        assert_eq!(picked, vec![1, 1, 1, 1]);
        p.set_down_ports(&BTreeSet::new());
        assert_eq!(p.pick(7, 1).unwrap().params[0], 2);
        let mut alone = members(&[(3, 2)]);
        alone[0].watch = Some((4, true));
        p.set_down_ports(&BTreeSet::from([4]));
        p.set_group(9, alone, 0, true, LIMIT).unwrap();
        assert_eq!(p.pick(9, 0), None); // every member down: as an empty group
    }

    #[test]
    fn sum_of_members_counts_members_not_weights() {
        let mut p = profile();
        let by_members = (8, 8, SizeBy::Members);
        p.set_group(7, members(&[(1, 100), (2, 100)]), 2, true, by_members)
            .unwrap();
        assert!(matches!(
            p.set_group(8, members(&[(1, 1), (2, 1), (3, 1)]), 2, true, by_members),
            Err(ProfileError::Full(_))
        ));
    }

    #[test]
    fn the_size_bounds_the_sum_over_all_groups_and_a_refusal_changes_nothing() {
        let mut p = profile();
        p.set_group(7, members(&[(1, 3), (2, 2)]), 0, true, LIMIT)
            .unwrap();
        p.set_group(8, members(&[(3, 3)]), 0, true, LIMIT).unwrap(); // 8 of 8
        assert!(matches!(
            p.set_group(9, members(&[(1, 1)]), 0, true, LIMIT),
            Err(ProfileError::Full(_))
        ));
        assert!(matches!(
            p.set_group(8, members(&[(3, 4)]), 0, false, LIMIT),
            Err(ProfileError::Full(_))
        ));
        assert_eq!(p.groups[&8].members, members(&[(3, 3)]));
        assert!(!p.groups.contains_key(&9));
        // replacing a group counts its new members, not its old ones as well
        p.set_group(8, members(&[(3, 1), (2, 2)]), 0, false, LIMIT)
            .unwrap();
        let by_members = (3, 3, SizeBy::Members);
        let mut q = profile();
        q.set_group(1, members(&[(1, 50), (2, 50)]), 0, true, by_members)
            .unwrap();
        q.set_group(2, members(&[(3, 9)]), 0, true, by_members)
            .unwrap(); // 3 members of 3
        assert!(matches!(
            q.set_group(3, members(&[(1, 1)]), 0, true, by_members),
            Err(ProfileError::Full(_))
        ));
    }

    #[test]
    fn refusals_follow_the_p4runtime_rules() {
        let mut p = profile();
        assert_eq!(p.add_member(1, call(1), 8), Err(ProfileError::Exists));
        assert!(matches!(
            p.set_group(7, members(&[(9, 1)]), 0, true, LIMIT),
            Err(ProfileError::NotFound(_))
        ));
        assert!(matches!(
            p.set_group(7, members(&[(1, 0)]), 0, true, LIMIT),
            Err(ProfileError::Invalid(_))
        ));
        assert!(matches!(
            p.set_group(7, members(&[(1, 2), (2, 2)]), 3, true, LIMIT),
            Err(ProfileError::Full(_))
        ));
        p.set_group(7, members(&[(1, 1)]), 3, true, LIMIT).unwrap();
        assert!(matches!(
            p.set_group(7, members(&[(1, 1)]), 4, false, LIMIT),
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
