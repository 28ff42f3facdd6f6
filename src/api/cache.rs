//! Short-lived caches of what the request path reads on every request:
//! verified API keys (by the SHA-256 of the secret) and resolved
//! deployments (by caller and name). Loaded models have their own cache in
//! `models` (a model never changes, so it needs no expiry).
//!
//! Correctness, in one paragraph (also docs/performance.md, "Serving
//! caches"): an entry is only ever a positive answer the store gave (an
//! active key, an existing deployment); unknown or revoked keys and unknown
//! deployments are never cached, they are read from the store every time.
//! On the replica that makes a change (revoking a key, re-pointing or
//! rolling back a deployment, deleting a model) the route clears the cache
//! right after the change commits, so the next request there sees it. A
//! fill that read the store before that change but arrives after the clear
//! is dropped: every fill carries the cache's generation read before its
//! store read, and [`TtlCache::clear`] bumps the generation. On other
//! replicas (PostgreSQL, or processes sharing a SQLite file) an entry
//! lives at most [`CACHE_TTL`] counted from the start of the store read
//! that filled it, so a change committed at time t is seen by every request
//! that starts after t + [`CACHE_TTL`].

use std::borrow::Borrow;
use std::collections::HashMap;
use std::hash::Hash;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::store::deployments::Deployment;
use crate::store::keys::Role;

/// How long another replica may keep serving a cached answer after a
/// change: a revoked key, a moved deployment.
pub const CACHE_TTL: Duration = Duration::from_secs(1);

/// Entries kept before expired ones are dropped (and, if none expired, all
/// of them): bounds memory whatever the traffic.
const CAPACITY: usize = 4096;

/// The caches of one server (shared by its handlers).
pub(crate) struct Caches {
    /// Active keys by the SHA-256 of their secret: (key id, role).
    pub(crate) keys: TtlCache<[u8; 32], (String, Role)>,
    /// Deployments by [`deployment_key`]: what a name means to a caller.
    pub(crate) deployments: TtlCache<String, Deployment>,
}

impl Default for Caches {
    fn default() -> Caches {
        Caches {
            keys: TtlCache::new(CACHE_TTL),
            deployments: TtlCache::new(CACHE_TTL),
        }
    }
}

/// The cache key of deployment `name` as `caller_id` means it (a plain
/// name resolves per caller). Key ids never contain NUL, so the pair is
/// unambiguous.
pub(crate) fn deployment_key(caller_id: &str, name: &str) -> String {
    let mut k = String::with_capacity(caller_id.len() + 1 + name.len());
    k.push_str(caller_id);
    k.push('\0');
    k.push_str(name);
    k
}

/// A map whose entries expire [`CACHE_TTL`] after the read that filled them.
pub(crate) struct TtlCache<K, V> {
    inner: Mutex<Inner<K, V>>,
    ttl: Duration,
}

struct Inner<K, V> {
    map: HashMap<K, (V, Instant)>,
    /// Bumped by every [`TtlCache::clear`].
    generation: u64,
}

/// Taken before a store read whose answer may be cached: the generation at
/// that moment and when the read started (the entry's age counts from it).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Ticket {
    generation: u64,
    read_at: Instant,
}

impl<K: Eq + Hash, V: Clone> TtlCache<K, V> {
    pub(crate) fn new(ttl: Duration) -> TtlCache<K, V> {
        TtlCache {
            inner: Mutex::new(Inner {
                map: HashMap::new(),
                generation: 0,
            }),
            ttl,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner<K, V>> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The live entry of `key`, if any.
    pub(crate) fn get<Q>(&self, key: &Q) -> Option<V>
    where
        K: Borrow<Q>,
        Q: Eq + Hash + ?Sized,
    {
        let now = Instant::now();
        let inner = self.lock();
        match inner.map.get(key) {
            Some((v, read_at)) if now.duration_since(*read_at) < self.ttl => Some(v.clone()),
            _ => None,
        }
    }

    /// Take before reading the store for a value to [`insert`](Self::insert).
    pub(crate) fn ticket(&self) -> Ticket {
        let generation = self.lock().generation;
        Ticket {
            generation,
            read_at: Instant::now(),
        }
    }

    /// Cache `value` read from the store after `ticket` was taken, unless
    /// the cache was cleared since (the value may predate the change that
    /// cleared it).
    pub(crate) fn insert(&self, ticket: Ticket, key: K, value: V) {
        let now = Instant::now();
        let mut inner = self.lock();
        if inner.generation != ticket.generation {
            return;
        }
        if inner.map.len() >= CAPACITY {
            let ttl = self.ttl;
            inner
                .map
                .retain(|_, (_, read_at)| now.duration_since(*read_at) < ttl);
            if inner.map.len() >= CAPACITY {
                inner.map.clear();
            }
        }
        inner.map.insert(key, (value, ticket.read_at));
    }

    /// Forget everything, and refuse fills that read the store before now.
    pub(crate) fn clear(&self) {
        let mut inner = self.lock();
        inner.generation += 1;
        inner.map.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fill_read_before_a_clear_is_dropped() {
        let c: TtlCache<String, u32> = TtlCache::new(Duration::from_secs(60));
        let before = c.ticket();
        c.clear();
        c.insert(before, "k".into(), 1);
        assert_eq!(c.get("k"), None);
        let after = c.ticket();
        c.insert(after, "k".into(), 2);
        assert_eq!(c.get("k"), Some(2));
        c.clear();
        assert_eq!(c.get("k"), None);
    }

    #[test]
    fn an_entry_expires_counted_from_its_read() {
        let c: TtlCache<String, u32> = TtlCache::new(Duration::ZERO);
        let t = c.ticket();
        c.insert(t, "k".into(), 1);
        assert_eq!(c.get("k"), None);
        let c: TtlCache<String, u32> = TtlCache::new(Duration::from_secs(60));
        let t = c.ticket();
        c.insert(t, "k".into(), 1);
        assert_eq!(c.get("k"), Some(1));
    }

    #[test]
    fn the_map_never_grows_past_its_capacity() {
        let c: TtlCache<usize, usize> = TtlCache::new(Duration::from_secs(60));
        for i in 0..3 * CAPACITY {
            let t = c.ticket();
            c.insert(t, i, i);
        }
        assert!(c.lock().map.len() <= CAPACITY);
        assert_eq!(c.get(&(3 * CAPACITY - 1)), Some(3 * CAPACITY - 1));
    }
}
