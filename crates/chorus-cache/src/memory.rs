//! The memory level: entries under their fast hash (a list, for the rare collision), within a
//! budget of bytes, the oldest put leaving first at a constant cost per entry (a process that
//! compiles distinct kernels for ever keeps flat memory; the disk keeps them).

use std::collections::{HashMap, VecDeque};

/// What an entry costs beyond the bytes its owner counts for it: its slot in the map and the
/// eviction order, and the allocator's headers of a handful of allocations. An estimate on the
/// high side, so that the budget bounds the memory the level really holds, not only payloads.
pub const ENTRY_OVERHEAD: usize = 64 + 6 * 16;

/// One entry and its bookkeeping.
#[derive(Debug)]
struct Slot<E> {
    entry: E,
    /// When it was put (the eviction order's identity of the entry).
    seq: u64,
    /// What it counts against the budget.
    bytes: usize,
}

/// The memory level of one backend: entries of type `E`, each found by a hash of what
/// identifies its compile and confirmed by the caller's comparison.
#[derive(Debug)]
pub struct MemoryCache<E> {
    map: HashMap<u64, Vec<Slot<E>>>,
    /// `(hash, seq)` of each entry put, oldest first. An entry replaced or evicted leaves a
    /// stale record, skipped when it comes up; the records are compacted when the stale ones
    /// outnumber the live entries, so the queue stays proportional to what the level holds.
    order: VecDeque<(u64, u64)>,
    next_seq: u64,
    entries: usize,
    bytes: usize,
}

impl<E> Default for MemoryCache<E> {
    fn default() -> Self {
        MemoryCache {
            map: HashMap::new(),
            order: VecDeque::new(),
            next_seq: 0,
            entries: 0,
            bytes: 0,
        }
    }
}

impl<E> MemoryCache<E> {
    /// The first entry under `hash` that `answers` accepts.
    pub fn get(&self, hash: u64, mut answers: impl FnMut(&E) -> bool) -> Option<&E> {
        self.map
            .get(&hash)?
            .iter()
            .map(|slot| &slot.entry)
            .find(|entry| answers(entry))
    }

    /// Adds `entry` under `hash`, counting `bytes` (what it holds: its parts, and
    /// [`ENTRY_OVERHEAD`] is added here) against `budget`, after removing the entries under
    /// `hash` that `replaces` accepts; then evicts the oldest entries until `budget` holds (an
    /// entry larger than the budget leaves at once: the caller keeps its value). Returns how
    /// many entries were evicted.
    pub fn put(
        &mut self,
        hash: u64,
        entry: E,
        bytes: usize,
        budget: usize,
        replaces: impl FnMut(&E) -> bool,
    ) -> usize {
        self.remove_where(hash, replaces);
        let bytes = bytes + ENTRY_OVERHEAD;
        let seq = self.next_seq;
        self.next_seq += 1;
        self.bytes += bytes;
        self.entries += 1;
        self.order.push_back((hash, seq));
        self.map
            .entry(hash)
            .or_default()
            .push(Slot { entry, seq, bytes });
        let evicted = self.evict(budget);
        if self.order.len() > 2 * self.entries + 64 {
            let map = &self.map;
            self.order.retain(|(hash, seq)| {
                map.get(hash)
                    .is_some_and(|l| l.iter().any(|s| s.seq == *seq))
            });
        }
        evicted
    }

    /// Removes the entries under `hash` for which `remove` is true.
    pub fn remove_where(&mut self, hash: u64, mut remove: impl FnMut(&E) -> bool) {
        self.remove_slots(hash, |slot| remove(&slot.entry));
    }

    fn remove_slots(&mut self, hash: u64, mut remove: impl FnMut(&Slot<E>) -> bool) {
        let Some(list) = self.map.get_mut(&hash) else {
            return;
        };
        list.retain(|slot| {
            let gone = remove(slot);
            if gone {
                self.bytes -= slot.bytes;
                self.entries -= 1;
            }
            !gone
        });
        if list.is_empty() {
            self.map.remove(&hash);
        }
    }

    /// Evicts the oldest entries until the level holds at most `budget` bytes; returns how many
    /// it evicted.
    pub fn evict(&mut self, budget: usize) -> usize {
        let before = self.entries;
        while self.bytes > budget {
            let Some((hash, seq)) = self.order.pop_front() else {
                break;
            };
            self.remove_slots(hash, |slot| slot.seq == seq);
        }
        before - self.entries
    }

    /// How many entries it holds.
    pub fn entries(&self) -> usize {
        self.entries
    }

    /// How many bytes it holds, as its budget counts them.
    pub fn bytes(&self) -> usize {
        self.bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_level_keeps_its_budget_and_evicts_the_oldest_first() {
        let mut cache = MemoryCache::default();
        let size = 100 + ENTRY_OVERHEAD;
        // Room for 10 entries: 1000 distinct compiles keep the last 10.
        for n in 0..1000u64 {
            cache.put(n, n, 100, 10 * size, |_| false);
            assert!(cache.bytes() <= 10 * size);
        }
        assert_eq!(cache.bytes(), 10 * size);
        assert_eq!((cache.map.len(), cache.entries()), (10, 10));
        assert!((990..1000).all(|n| cache.get(n, |e| *e == n).is_some()));
        assert!(cache.order.len() <= 2 * 10 + 64);
        // A smaller budget evicts the oldest now.
        assert_eq!(cache.evict(3 * size), 7);
        assert_eq!(cache.entries(), 3);
        assert!((997..1000).all(|n| cache.map.contains_key(&n)));
        // An entry larger than the budget leaves at once.
        assert_eq!(cache.put(5000, 5000, 1 << 20, 1 << 10, |_| false), 4);
        assert_eq!(cache.entries(), 0);
    }

    #[test]
    fn replacing_entries_keeps_the_eviction_order_bounded() {
        let mut cache = MemoryCache::default();
        // The same two compiles put again and again (threads racing on one miss do this),
        // under a budget they never reach: the stale records must not pile up.
        for round in 0..10_000u64 {
            let n = round % 2;
            cache.put(n, (n, round), 10, usize::MAX, |e| e.0 == n);
            assert!(cache.order.len() <= 2 * 2 + 64 + 1, "{}", cache.order.len());
        }
        assert_eq!(cache.entries(), 2);
        // Oldest first, by the time an entry was put (not by when its hash was first seen).
        let budget = cache.bytes();
        cache.put(7, (7, 0), 10, budget, |_| false);
        let kept: Vec<u64> = cache.map.keys().copied().collect();
        assert_eq!(cache.entries(), 2);
        assert!(
            !kept.contains(&0),
            "entry 0 was put before entry 1: {kept:?}"
        );
    }

    #[test]
    fn a_hash_collision_is_told_apart_by_the_comparison() {
        let mut cache = MemoryCache::default();
        cache.put(1, "stored", 6, usize::MAX, |_| false);
        assert_eq!(cache.get(1, |e| *e == "wanted"), None);
        cache.put(1, "wanted", 6, usize::MAX, |e| *e == "wanted");
        assert_eq!(cache.get(1, |e| *e == "wanted"), Some(&"wanted"));
        assert_eq!(cache.get(1, |e| *e == "stored"), Some(&"stored"));
        assert_eq!(cache.entries(), 2);
    }
}
