//! Snapshots of the whole core ([`crate::Scheduler::snapshot`],
//! [`crate::Scheduler::restore`]): the format, its checks, and the helpers
//! the state types and policies serialize with.
//!
//! # Format
//!
//! ```text
//! magic    8 bytes   b"FSCHSNAP"
//! version  u16 LE    FORMAT_VERSION
//! length   u64 LE    of the body
//! checksum u64 LE    FNV-1a (64 bits) of the body
//! body     postcard  policy names, platform state, RNG, stats, pending
//!                    Control notices and timers, then each policy's own
//!                    bytes (postcard of the policy struct)
//! ```
//!
//! **Same state, same bytes.** postcard is positional and has one
//! encoding per value; the only containers whose in-memory layout depends
//! on history rather than content, hash maps and binary heaps, are written
//! in sorted order ([`sorted_map`], [`sorted_heap`]), and a map read back
//! must be sorted with unique keys. So the bytes depend on the logical
//! state only: a restored scheduler (whose hash tables are laid out
//! differently) snapshots to the same bytes, and after the same steps
//! both snapshot identically again.
//!
//! **Checks on restore.** The magic, the format version (another version
//! is a [`SnapshotError::Mismatch`]), the length and the checksum (any
//! change of one byte is caught; this guards against corruption, not
//! against a forger), then the policy names and parameters against the
//! scheduler being restored, the initial platform, and the consistency of
//! the platform state (counters, free lists, slots held). Nothing panics,
//! whatever the bytes. A policy's internal indexes are trusted once the
//! checksum holds: they were written by [`crate::Scheduler::snapshot`].

use crate::ids::{MachineId, OrgId, TaskId, UserId};
use crate::model::{TaskSpec, WorkflowRef};
use crate::prelude::*;
use crate::time::Time;
use alloc::collections::BinaryHeap;
use core::fmt;
use core::hash::Hash;
use core::marker::PhantomData;
use serde::de::{DeserializeOwned, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Why a snapshot could not be taken or restored.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SnapshotError {
    /// A policy keeps state the snapshot format does not cover (the
    /// clairvoyant baselines, policies written outside the registry).
    #[error(
        "policy `{0}` does not support snapshots; run without snapshots (restart replays the whole log) or choose a policy that supports them"
    )]
    Unsupported(&'static str),
    /// The bytes are not a complete snapshot written by this format
    /// (truncated, altered, or not a snapshot at all).
    #[error("corrupt snapshot: {0}; discard it and recover from an older snapshot or from the whole log")]
    Corrupt(String),
    /// A sound snapshot that does not belong to this scheduler: another
    /// format version, other policies or parameters, another platform.
    #[error("snapshot does not match this scheduler: {0}")]
    Mismatch(String),
}

/// The first bytes of every snapshot.
pub const MAGIC: [u8; 8] = *b"FSCHSNAP";
/// The format version: bumped whenever any serialized type changes.
pub const FORMAT_VERSION: u16 = 2;
/// Magic, version, length, checksum.
const HEADER: usize = 8 + 2 + 8 + 8;

/// FNV-1a, 64 bits: every one-byte change gives another value (each step
/// is a bijection of the running hash).
fn checksum(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// Fills in the header of `out` (header space + body).
fn fill_header(out: &mut [u8]) {
    let (head, body) = out.split_at_mut(HEADER);
    head[..8].copy_from_slice(&MAGIC);
    head[8..10].copy_from_slice(&FORMAT_VERSION.to_le_bytes());
    head[10..18].copy_from_slice(&(body.len() as u64).to_le_bytes());
    head[18..26].copy_from_slice(&checksum(body).to_le_bytes());
}

/// A snapshot whose body is `body`'s postcard encoding.
pub(crate) fn write_sealed<T: Serialize>(body: &T) -> Result<Vec<u8>, SnapshotError> {
    let out = postcard::to_extend(body, vec![0u8; HEADER])
        .map_err(|e| SnapshotError::Corrupt(format!("the scheduler cannot be encoded: {e}")))?;
    let mut out = out;
    fill_header(&mut out);
    Ok(out)
}

/// Header + body.
#[cfg(test)]
pub(crate) fn seal(body: &[u8]) -> Vec<u8> {
    let mut out = vec![0u8; HEADER];
    out.extend_from_slice(body);
    fill_header(&mut out);
    out
}

/// Checks the header; returns the body.
pub(crate) fn open(bytes: &[u8]) -> Result<&[u8], SnapshotError> {
    let corrupt = |why: &str| SnapshotError::Corrupt(why.to_string());
    if bytes.len() < MAGIC.len() || bytes[..MAGIC.len()] != MAGIC {
        return Err(corrupt(
            "it does not start with the snapshot magic bytes (not a fairsched snapshot)",
        ));
    }
    if bytes.len() < HEADER {
        return Err(corrupt("truncated header"));
    }
    let u64_at = |i: usize| {
        let mut b = [0u8; 8];
        b.copy_from_slice(&bytes[i..i + 8]);
        u64::from_le_bytes(b)
    };
    let version = u16::from_le_bytes([bytes[8], bytes[9]]);
    if version != FORMAT_VERSION {
        return Err(SnapshotError::Mismatch(format!(
            "the snapshot is in format version {version}, this build reads version {FORMAT_VERSION} only \
             (recover from the log with this build, or restore with the build that wrote it)"
        )));
    }
    let (len, sum) = (u64_at(10), u64_at(18));
    let body = &bytes[HEADER..];
    if body.len() as u64 != len {
        return Err(SnapshotError::Corrupt(format!(
            "the header announces {len} bytes of body, {} are there (truncated or extended)",
            body.len()
        )));
    }
    if checksum(body) != sum {
        return Err(corrupt("checksum mismatch (the bytes were altered)"));
    }
    Ok(body)
}

/// postcard, every byte used.
pub(crate) fn decode<'a, T: Deserialize<'a>>(what: &str, bytes: &'a [u8]) -> Result<T, SnapshotError> {
    match postcard::take_from_bytes::<T>(bytes) {
        Ok((v, [])) => Ok(v),
        Ok((_, rest)) => Err(SnapshotError::Corrupt(format!(
            "{what}: {} bytes left over after the data",
            rest.len()
        ))),
        Err(e) => Err(SnapshotError::Corrupt(format!("{what}: {e}"))),
    }
}

pub(crate) fn encode<T: Serialize + ?Sized>(what: &str, v: &T) -> Result<Vec<u8>, SnapshotError> {
    // Serializing plain data into a growing vector does not fail; an
    // error here is a type written with a serde feature postcard lacks.
    postcard::to_allocvec(v).map_err(|e| SnapshotError::Corrupt(format!("{what} cannot be encoded: {e}")))
}

/// A policy's bytes ([`crate::Order::save`]).
pub type Bytes = Vec<u8>;

/// A policy's state, for `snapshot_policy!`.
pub fn encode_policy<T: Serialize>(name: &'static str, policy: &T) -> Result<Vec<u8>, SnapshotError> {
    encode(name, policy)
}

/// A policy's state read back, for `snapshot_policy!`.
pub fn decode_policy<T: DeserializeOwned>(name: &'static str, bytes: &[u8]) -> Result<T, SnapshotError> {
    decode(&format!("state of policy `{name}`"), bytes)
}

/// A parameter of the policy being restored must equal the snapshot's
/// (the scheduler must be built with the same specs).
pub fn same_config<T: PartialEq + fmt::Debug>(
    policy: &'static str,
    field: &str,
    here: &T,
    snapshot: &T,
) -> Result<(), SnapshotError> {
    if here == snapshot {
        return Ok(());
    }
    Err(SnapshotError::Mismatch(format!(
        "policy `{policy}`: parameter `{field}` is {snapshot:?} in the snapshot and {here:?} in this scheduler; \
         build the scheduler with the configuration the snapshot was taken with"
    )))
}

/// The last path segment of a type's name, without generics: the default
/// [`crate::Order::policy_name`] of a policy that does not say its name.
pub fn short_type_name<T: ?Sized>() -> &'static str {
    let full = core::any::type_name::<T>();
    let base = full.split('<').next().unwrap_or(full);
    base.rsplit("::").next().unwrap_or(base)
}

/// Implements [`crate::Order::policy_name`], `save` and `load` (or those
/// of `Allocate`/`Control`) for a policy struct that is `Serialize +
/// DeserializeOwned`: its bytes are the struct's postcard encoding, and
/// `load` replaces `*self` with the struct read back. Parameters listed
/// after `config:` must be equal in the scheduler being restored and in
/// the snapshot ([`SnapshotError::Mismatch`] otherwise).
///
/// For policies of fairsched and out of tree alike (a live broker
/// snapshots its core, policies included):
///
/// ```
/// use fairsched_core::{snapshot_policy, MachineId, Notice, Order, Pick, SimRng, TaskId, View};
/// use serde::{Deserialize, Serialize};
///
/// #[derive(Clone, Default, Serialize, Deserialize)]
/// struct Lifo { stack: Vec<TaskId>, depth: u32 }
///
/// impl Order for Lifo {
///     snapshot_policy!("lifo", config: depth);
///     fn notify(&mut self, _: &View, n: &Notice) {
///         match *n {
///             Notice::Queued { task, .. } => self.stack.push(task),
///             Notice::Started { task, .. } | Notice::Left { task, .. } => self.stack.retain(|&t| t != task),
///             _ => {}
///         }
///     }
///     fn pick(&mut self, _: &View, _: MachineId, _: &mut SimRng) -> Option<Pick> {
///         self.stack.last().map(|&t| Pick::Start(t))
///     }
/// }
///
/// let a = Lifo { stack: vec![TaskId(3), TaskId(5)], depth: 1 };
/// let mut b = Lifo { depth: 1, ..Lifo::default() };
/// b.load(&a.save().unwrap()).unwrap();
/// assert_eq!(b.stack, a.stack);
/// // Built with another parameter: refused, with its name.
/// let mut c = Lifo { depth: 2, ..Lifo::default() };
/// assert!(c.load(&a.save().unwrap()).unwrap_err().to_string().contains("depth"));
/// ```
#[macro_export]
macro_rules! snapshot_policy {
    ($name:expr $(, config: $($cfg:ident),+)? $(,)?) => {
        fn policy_name(&self) -> &'static str {
            $name
        }
        fn save(&self) -> ::core::result::Result<$crate::snapshot::Bytes, $crate::snapshot::SnapshotError> {
            $crate::snapshot::encode_policy($name, self)
        }
        fn load(&mut self, bytes: &[u8]) -> ::core::result::Result<(), $crate::snapshot::SnapshotError> {
            let loaded: Self = $crate::snapshot::decode_policy($name, bytes)?;
            $($(
                $crate::snapshot::same_config($name, stringify!($cfg), &self.$cfg, &loaded.$cfg)?;
            )+)?
            *self = loaded;
            Ok(())
        }
    };
}
pub use crate::snapshot_policy;

/// `#[serde(serialize_with = "crate::snapshot::as_bytes")]`: a byte
/// string (postcard: its length, then the bytes), read back borrowed as
/// `&[u8]`.
pub(crate) fn as_bytes<S: Serializer>(v: &&[u8], s: S) -> Result<S::Ok, S::Error> {
    s.serialize_bytes(v)
}

/// `#[serde(with = "crate::snapshot::sorted_map")]` for an `FxHashMap`:
/// written as its entries in increasing key order (never in table order,
/// which depends on history); read back only if the keys are strictly
/// increasing, so one state has one encoding.
pub mod sorted_map {
    use super::*;

    pub fn serialize<K, V, S>(map: &FxHashMap<K, V>, s: S) -> Result<S::Ok, S::Error>
    where
        K: Ord + Serialize,
        V: Serialize,
        S: Serializer,
    {
        let mut entries: Vec<(&K, &V)> = map.iter().collect();
        entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
        s.collect_seq(entries)
    }

    pub fn deserialize<'de, K, V, D>(d: D) -> Result<FxHashMap<K, V>, D::Error>
    where
        K: Ord + Hash + Copy + Deserialize<'de>,
        V: Deserialize<'de>,
        D: Deserializer<'de>,
    {
        struct Entries<K, V>(PhantomData<(K, V)>);
        impl<'de, K, V> Visitor<'de> for Entries<K, V>
        where
            K: Ord + Hash + Copy + Deserialize<'de>,
            V: Deserialize<'de>,
        {
            type Value = FxHashMap<K, V>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("map entries in strictly increasing key order")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                // The announced length is not trusted for the allocation.
                let cap = seq.size_hint().unwrap_or(0).min(4096);
                let mut map = FxHashMap::with_capacity_and_hasher(cap, Default::default());
                let mut last: Option<K> = None;
                while let Some((k, v)) = seq.next_element::<(K, V)>()? {
                    if last.is_some_and(|l| l >= k) {
                        return Err(serde::de::Error::custom("map keys not strictly increasing"));
                    }
                    last = Some(k);
                    map.insert(k, v);
                }
                Ok(map)
            }
        }
        d.deserialize_seq(Entries(PhantomData))
    }
}

/// `#[serde(with = "crate::snapshot::sorted_heap")]` for a
/// [`BinaryHeap`]: written as its values in increasing order (a heap's
/// array layout depends on the order of its pushes).
pub mod sorted_heap {
    use super::*;

    pub fn serialize<T: Ord + Serialize, S: Serializer>(
        heap: &BinaryHeap<T>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        let mut v: Vec<&T> = heap.iter().collect();
        v.sort_unstable();
        s.collect_seq(v)
    }

    pub fn deserialize<'de, T, D>(d: D) -> Result<BinaryHeap<T>, D::Error>
    where
        T: Ord + Deserialize<'de>,
        D: Deserializer<'de>,
    {
        let v = Vec::<T>::deserialize(d)?;
        if v.windows(2).any(|w| w[0] > w[1]) {
            return Err(serde::de::Error::custom("heap values not in increasing order"));
        }
        Ok(BinaryHeap::from(v))
    }
}

/// `#[serde(with = "crate::snapshot::spec")]` for a [`TaskSpec`]: every
/// field, always (its own serde impl skips an absent `target`, which a
/// positional format cannot read back).
pub mod spec {
    use super::*;

    #[derive(Serialize, Deserialize)]
    struct Repr {
        id: TaskId,
        user: UserId,
        org: OrgId,
        slots: u32,
        priority: i64,
        estimate: Option<Time>,
        workflow: Option<WorkflowRef>,
        optional: bool,
        target: Option<MachineId>,
    }

    pub fn serialize<S: Serializer>(spec: &TaskSpec, s: S) -> Result<S::Ok, S::Error> {
        // Exhaustive: a new field of `TaskSpec` does not compile here.
        let TaskSpec {
            id,
            user,
            org,
            slots,
            priority,
            estimate,
            workflow,
            optional,
            target,
        } = spec.clone();
        Repr {
            id,
            user,
            org,
            slots,
            priority,
            estimate,
            workflow,
            optional,
            target,
        }
        .serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<TaskSpec, D::Error> {
        let Repr {
            id,
            user,
            org,
            slots,
            priority,
            estimate,
            workflow,
            optional,
            target,
        } = Repr::deserialize(d)?;
        Ok(TaskSpec {
            id,
            user,
            org,
            slots,
            priority,
            estimate,
            workflow,
            optional,
            target,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Serialize, Deserialize, Debug, PartialEq)]
    struct M(#[serde(with = "sorted_map")] FxHashMap<TaskId, u32>);

    #[test]
    fn hash_maps_are_written_in_key_order_whatever_their_history() {
        let mut a = FxHashMap::default();
        let mut b = FxHashMap::default();
        for i in 0..200u64 {
            a.insert(TaskId(i), i as u32);
        }
        for i in (0..400u64).rev() {
            b.insert(TaskId(i), i as u32);
        }
        for i in 200..400u64 {
            b.remove(&TaskId(i));
        }
        let (ea, eb) = (encode("a", &M(a)).unwrap(), encode("b", &M(b)).unwrap());
        assert_eq!(ea, eb);
        let back: M = decode("m", &ea).unwrap();
        assert_eq!(encode("back", &back).unwrap(), ea);
        // Unsorted or repeated keys are refused.
        let unsorted = postcard::to_allocvec(&[(TaskId(2), 0u32), (TaskId(1), 0)]).unwrap();
        assert!(decode::<M>("m", &unsorted).is_err());
        let repeated = postcard::to_allocvec(&[(TaskId(1), 0u32), (TaskId(1), 0)]).unwrap();
        assert!(decode::<M>("m", &repeated).is_err());
    }

    #[derive(Serialize, Deserialize)]
    struct H(#[serde(with = "sorted_heap")] BinaryHeap<i64>);

    #[test]
    fn heaps_are_written_sorted() {
        let a: BinaryHeap<i64> = [5, 1, 4, 1, 3].into_iter().collect();
        let b: BinaryHeap<i64> = [1, 1, 3, 4, 5].into_iter().collect();
        let ea = encode("a", &H(a)).unwrap();
        assert_eq!(ea, encode("b", &H(b)).unwrap());
        let back: H = decode("h", &ea).unwrap();
        assert_eq!(back.0.into_sorted_vec(), vec![1, 1, 3, 4, 5]);
    }

    #[test]
    fn the_header_is_checked() {
        let sealed = seal(b"body");
        assert_eq!(open(&sealed).unwrap(), b"body");
        for n in 0..sealed.len() {
            assert!(open(&sealed[..n]).is_err(), "truncated at {n}");
        }
        for i in 0..sealed.len() {
            let mut bad = sealed.clone();
            bad[i] ^= 0x10;
            let e = open(&bad).unwrap_err();
            if (8..10).contains(&i) {
                assert!(matches!(e, SnapshotError::Mismatch(_)), "{e}");
            } else {
                assert!(matches!(e, SnapshotError::Corrupt(_)), "byte {i}: {e}");
            }
        }
    }

    /// A busy scheduler (priority order, workflow Control, slots joining
    /// and leaving, a requeue) and its snapshot.
    fn busy() -> (crate::Scheduler, Vec<u8>) {
        let r = crate::registry::Registry::builtin();
        use crate::{Event, Phase, Scheduler, SlotId, WorkflowId};
        let mut core = Scheduler::new(
            &crate::Platform::owned_pool(&[2, 1]),
            7,
            r.build_allocate(&"single-pool".parse().unwrap()).unwrap(),
            r.build_order(&"priority".parse().unwrap()).unwrap(),
            Some(
                r.build_control(&"workflow-fairness[tau=0.05]".parse().unwrap())
                    .unwrap(),
            ),
        );
        let mut out = Vec::new();
        for i in 0..12u64 {
            let mut spec = TaskSpec::new(i + 1, (i % 3) as i64, (i % 3) as u32);
            spec.workflow = Some(WorkflowRef {
                workflow: WorkflowId((i % 2) as u32),
                activity: 0,
            });
            let mut events = vec![Event::Submit(spec)];
            if i % 4 == 3 {
                events.push(Event::Complete { task: TaskId(i - 2) });
                events.push(Event::Phase {
                    task: TaskId(i - 1),
                    phase: Phase::Exec,
                });
            }
            if i == 6 {
                events.push(Event::SlotLeave { slot: SlotId(1) });
                events.push(Event::SlotJoin {
                    machine: MachineId(0),
                    owner: OrgId(1),
                });
                events.push(Event::Requeue { task: TaskId(5) });
            }
            core.step(Time::from_secs(i as i64), events, None, &mut out)
                .unwrap();
        }
        let bytes = core.snapshot().unwrap();
        (core, bytes)
    }

    #[test]
    fn altered_bodies_with_a_valid_checksum_never_panic() {
        // Past the checksum (as if it had been forged), every one-byte
        // change of the body is read without a panic: refused, or a state
        // that passed the consistency checks.
        let (core, bytes) = busy();
        let body = &bytes[HEADER..];
        let mut refused = 0;
        for i in 0..body.len() {
            for x in [0x01u8, 0x80, 0xff] {
                let mut b = body.to_vec();
                b[i] ^= x;
                let mut fresh = core.clone();
                if fresh.restore(&seal(&b)).is_err() {
                    refused += 1;
                    assert!(
                        fresh.snapshot().unwrap() == bytes,
                        "a refused restore changed the scheduler"
                    );
                }
            }
        }
        assert!(refused > body.len(), "{refused} of {}", 3 * body.len());
        // Truncated bodies, resealed.
        for n in 0..body.len() {
            let mut fresh = core.clone();
            assert!(fresh.restore(&seal(&body[..n])).is_err(), "{n}");
        }
    }

    #[test]
    fn short_type_names() {
        assert_eq!(short_type_name::<crate::policy::fifo::Fifo>(), "Fifo");
        assert_eq!(short_type_name::<Vec<u8>>(), "Vec");
    }
}
