//! The memory budget of the webhook port: how many request-body bytes may be held in memory at
//! once, and how many body bytes may be under review at once.
//!
//! Peak memory is bounded by design, whatever the request mix: a body is read into memory only
//! after its bytes were reserved (its `Content-Length`, or the maximum body size when it has
//! none), and reviewed only after its bytes were reserved again from the (smaller) review budget,
//! which bounds what parsing and rendering allocate on top of the bodies. Bodies up to
//! `SMALL_BODY` bytes may also use a reserve that larger bodies cannot touch, so a burst of large
//! bodies never makes an ordinary review wait.
//!
//! A request that cannot reserve its bytes within `wait` is answered `429 Too Many Requests` with
//! `Retry-After: 1`, the way kube-apiserver's own max-in-flight filter sheds load
//! (`k8s.io/apiserver/pkg/server/filters/maxinflight.go`, `tooManyRequests`); kube-apiserver then
//! applies the webhook's `failurePolicy`.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::Duration;

use prometheus_client::metrics::gauge::Gauge;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Bodies up to this size may use the reserve (an ordinary Job's review is a few KiB; a 1 MiB
/// object is already unusual).
pub(crate) const SMALL_BODY: usize = 1024 * 1024;

/// Budgets are counted in KiB so that a `u32` semaphore can hold gigabytes.
const UNIT: usize = 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BudgetLimits {
    /// Request-body bytes held in memory at once, reserve included.
    pub(crate) body_bytes: usize,
    /// The part of `body_bytes` only bodies up to `SMALL_BODY` may use.
    pub(crate) reserve_bytes: usize,
    /// Body bytes under review at once (parsing and rendering allocate in proportion to them).
    pub(crate) review_bytes: usize,
    /// How long a request may wait for its bytes before it is answered 429.
    pub(crate) wait: Duration,
    /// How long a body already read may wait for the review budget.
    pub(crate) review_wait: Duration,
}

impl BudgetLimits {
    /// `body_bytes` split as a quarter reserve; the review budget fits one maximum-size body plus
    /// the reserve, so that at most one large body is parsed at a time.
    pub(crate) fn new(
        body_bytes: usize,
        max_body_bytes: usize,
        wait: Duration,
        review_wait: Duration,
    ) -> BudgetLimits {
        let reserve_bytes = (body_bytes / 4).max(SMALL_BODY);
        BudgetLimits {
            body_bytes: body_bytes.max(max_body_bytes + reserve_bytes),
            reserve_bytes,
            review_bytes: max_body_bytes + SMALL_BODY,
            wait,
            review_wait,
        }
    }
}

/// Shared by all connections; cheap to clone.
#[derive(Clone, Debug)]
pub(crate) struct MemoryBudget {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    limits: BudgetLimits,
    /// `jobgate_admission_body_bytes_reserved`: every body reservation adds its bytes and takes
    /// them away again when dropped, so the gauge is exact at rest whatever path (early answer,
    /// timeout, cancelled request, panic) the reservation left by.
    body_bytes_reserved: Gauge,
    large: Arc<Semaphore>,
    reserve: Pool,
    review: Arc<Semaphore>,
    /// The part of the review budget only bodies up to `SMALL_BODY` may use, so that they never
    /// queue behind a large one (tokio's semaphore is first come, first served).
    review_reserve: Pool,
    /// Set by the first refusal of a burst (logged once), cleared once the budget is idle again.
    refusing: AtomicBool,
    /// A large body was held since the budget was last idle: give the memory back then.
    trim_pending: AtomicBool,
}

/// Units that are only ever taken without waiting (the reserves): a count taken and given back
/// atomically. Every request of an ordinary size takes from both reserves; a tokio semaphore
/// would also lock its wait queue each time units are given back, a lock both runtime workers
/// contend for.
#[derive(Debug)]
struct Pool {
    available: AtomicU32,
}

impl Pool {
    fn new(units: u32) -> Pool {
        Pool {
            available: AtomicU32::new(units),
        }
    }

    fn try_take(&self, units: u32) -> bool {
        self.available
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |a| {
                a.checked_sub(units)
            })
            .is_ok()
    }

    fn give_back(&self, units: u32) {
        self.available.fetch_add(units, Ordering::Release);
    }
}

/// What a reservation holds until it is dropped.
#[derive(Debug)]
enum Held {
    Permit(OwnedSemaphorePermit),
    Reserve(u32),
    ReviewReserve(u32),
    Nothing,
}

/// Why bytes could not be reserved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct OverBudget {
    /// True for the first refusal since the budget was last idle (log it).
    pub(crate) first_of_burst: bool,
}

/// Reserved bytes; released on drop.
#[derive(Debug)]
pub(crate) struct Reservation {
    held: Held,
    large: bool,
    /// Bytes this reservation added to `body_bytes_reserved` (0 for the review budget).
    counted: i64,
    budget: MemoryBudget,
}

fn units(bytes: usize) -> u32 {
    u32::try_from(bytes.div_ceil(UNIT).max(1)).unwrap_or(u32::MAX)
}

impl MemoryBudget {
    /// A budget that keeps `body_bytes_reserved` equal to the body bytes it has reserved.
    pub(crate) fn new(limits: BudgetLimits, body_bytes_reserved: Gauge) -> MemoryBudget {
        let large = limits.body_bytes.saturating_sub(limits.reserve_bytes);
        MemoryBudget {
            inner: Arc::new(Inner {
                limits,
                body_bytes_reserved,
                large: Arc::new(Semaphore::new(units(large) as usize)),
                reserve: Pool::new(units(limits.reserve_bytes)),
                review: Arc::new(Semaphore::new(units(
                    limits.review_bytes.saturating_sub(SMALL_BODY),
                ) as usize)),
                review_reserve: Pool::new(units(SMALL_BODY)),
                refusing: AtomicBool::new(false),
                trim_pending: AtomicBool::new(false),
            }),
        }
    }

    pub(crate) fn limits(&self) -> BudgetLimits {
        self.inner.limits
    }

    /// Bytes of request bodies reserved now, read off the large-body semaphore and the reserve.
    #[cfg(test)]
    pub(crate) fn reserved_bytes(&self) -> usize {
        let l = self.inner.limits;
        let large = units(l.body_bytes.saturating_sub(l.reserve_bytes)) as usize;
        let reserve = units(l.reserve_bytes) as usize;
        let available = self.inner.reserve.available.load(Ordering::Acquire) as usize;
        (large.saturating_sub(self.inner.large.available_permits())
            + reserve.saturating_sub(available))
            * UNIT
    }

    /// Reserves `bytes` of body memory, waiting at most `wait`.
    pub(crate) async fn reserve_body(&self, bytes: usize) -> Result<Reservation, OverBudget> {
        let n = units(bytes);
        if bytes <= SMALL_BODY && self.inner.reserve.try_take(n) {
            return Ok(self.body_reservation(Held::Reserve(n), n, false));
        }
        let large = bytes > SMALL_BODY;
        match self
            .acquire(&self.inner.large, n, self.inner.limits.wait)
            .await
        {
            Some(permit) => {
                if large {
                    self.inner.trim_pending.store(true, Ordering::Relaxed);
                }
                Ok(self.body_reservation(Held::Permit(permit), n, large))
            }
            None => Err(self.refused()),
        }
    }

    /// Reserves `bytes` of the review budget, waiting at most `wait`.
    pub(crate) async fn reserve_review(&self, bytes: usize) -> Result<Reservation, OverBudget> {
        let n = units(bytes);
        if bytes <= SMALL_BODY && self.inner.review_reserve.try_take(n) {
            return Ok(self.reservation(Held::ReviewReserve(n), false));
        }
        let wait = self.inner.limits.review_wait;
        match self.acquire(&self.inner.review, n, wait).await {
            Some(permit) => Ok(self.reservation(Held::Permit(permit), false)),
            None => Err(self.refused()),
        }
    }

    async fn acquire(
        &self,
        semaphore: &Arc<Semaphore>,
        n: u32,
        wait: Duration,
    ) -> Option<OwnedSemaphorePermit> {
        match tokio::time::timeout(wait, semaphore.clone().acquire_many_owned(n)).await {
            Ok(Ok(permit)) => Some(permit),
            _ => None,
        }
    }

    fn reservation(&self, held: Held, large: bool) -> Reservation {
        Reservation {
            held,
            large,
            counted: 0,
            budget: self.clone(),
        }
    }

    fn body_reservation(&self, held: Held, units: u32, large: bool) -> Reservation {
        let counted = i64::from(units) * UNIT as i64;
        self.inner.body_bytes_reserved.inc_by(counted);
        let mut reservation = self.reservation(held, large);
        reservation.counted = counted;
        reservation
    }

    fn refused(&self) -> OverBudget {
        OverBudget {
            first_of_burst: !self.inner.refusing.swap(true, Ordering::Relaxed),
        }
    }

    /// Called after a large reservation is released: when no large body is held any more, the
    /// burst is over.
    fn large_released(&self) {
        let l = self.inner.limits;
        let total = units(l.body_bytes.saturating_sub(l.reserve_bytes)) as usize;
        if self.inner.large.available_permits() < total {
            return;
        }
        self.inner.refusing.store(false, Ordering::Relaxed);
        if self.inner.trim_pending.swap(false, Ordering::Relaxed) {
            super::allocator::give_back();
        }
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        // Release the bytes before asking whether the budget is idle.
        match std::mem::replace(&mut self.held, Held::Nothing) {
            Held::Permit(permit) => drop(permit),
            Held::Reserve(units) => self.budget.inner.reserve.give_back(units),
            Held::ReviewReserve(units) => self.budget.inner.review_reserve.give_back(units),
            Held::Nothing => {}
        }
        self.budget.inner.body_bytes_reserved.dec_by(self.counted);
        if self.large {
            self.budget.large_released();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: usize = 1024 * 1024;

    fn gauge(b: &MemoryBudget) -> i64 {
        b.inner.body_bytes_reserved.get()
    }

    /// The gauge follows the reservations on every path: kept, refused, and dropped by a task
    /// that panics while holding them.
    #[tokio::test]
    async fn the_gauge_returns_to_zero_after_refusals_and_panics() {
        let b = budget(10);
        let held: Vec<_> = futures::future::join_all((0..3).map(|_| b.reserve_body(7 * MIB)))
            .await
            .into_iter()
            .map(|r| r.unwrap())
            .collect();
        assert_eq!(gauge(&b), 21 * MIB as i64);
        assert!(b.reserve_body(7 * MIB).await.is_err());
        assert_eq!(gauge(&b), 21 * MIB as i64);
        let panicking = tokio::spawn({
            let b = b.clone();
            async move {
                let _small = b.reserve_body(64 * 1024).await;
                let _review = b.reserve_review(64 * 1024).await;
                panic!("a review that panics while holding its reservations");
            }
        });
        assert!(panicking.await.unwrap_err().is_panic());
        assert_eq!(gauge(&b), 21 * MIB as i64);
        drop(held);
        assert_eq!(gauge(&b), 0);
    }

    fn budget(wait_ms: u64) -> MemoryBudget {
        budget_with(wait_ms, wait_ms)
    }

    fn budget_with(wait_ms: u64, review_wait_ms: u64) -> MemoryBudget {
        MemoryBudget::new(
            BudgetLimits::new(
                32 * MIB,
                7 * MIB,
                Duration::from_millis(wait_ms),
                Duration::from_millis(review_wait_ms),
            ),
            Gauge::default(),
        )
    }

    #[tokio::test]
    async fn large_bodies_cannot_take_the_reserve_of_small_ones() {
        let b = budget(10);
        // 24 MiB usable by large bodies: three 7 MiB bodies fit, a fourth does not.
        let held: Vec<_> = futures::future::join_all((0..3).map(|_| b.reserve_body(7 * MIB)))
            .await
            .into_iter()
            .map(|r| r.unwrap())
            .collect();
        let refused = b.reserve_body(7 * MIB).await.unwrap_err();
        assert!(refused.first_of_burst);
        assert!(!b.reserve_body(7 * MIB).await.unwrap_err().first_of_burst);
        // Small bodies still get in, through the reserve.
        let small: Vec<_> = futures::future::join_all((0..100).map(|_| b.reserve_body(64 * 1024)))
            .await
            .into_iter()
            .map(|r| r.unwrap())
            .collect();
        assert_eq!(b.reserved_bytes(), 21 * MIB + 100 * 64 * 1024);
        assert_eq!(gauge(&b), b.reserved_bytes() as i64);
        drop(small);
        drop(held);
        assert_eq!(b.reserved_bytes(), 0);
        assert_eq!(gauge(&b), 0);
        // The burst is over: the next refusal is logged again.
        let again: Vec<_> = futures::future::join_all((0..3).map(|_| b.reserve_body(7 * MIB)))
            .await
            .into_iter()
            .map(|r| r.unwrap())
            .collect();
        assert!(b.reserve_body(7 * MIB).await.unwrap_err().first_of_burst);
        drop(again);
    }

    #[tokio::test]
    async fn a_waiting_request_gets_bytes_released_within_its_wait() {
        let b = budget(2_000);
        let held: Vec<_> = futures::future::join_all((0..3).map(|_| b.reserve_body(7 * MIB)))
            .await
            .into_iter()
            .map(|r| r.unwrap())
            .collect();
        let waiter = tokio::spawn({
            let b = b.clone();
            async move { b.reserve_body(7 * MIB).await.map(|_| ()) }
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        drop(held);
        assert_eq!(waiter.await.unwrap(), Ok(()));
    }

    #[tokio::test]
    async fn one_maximum_size_body_is_reviewed_at_a_time_beside_small_ones() {
        let b = budget(10);
        let big = b.reserve_review(7 * MIB).await.unwrap();
        assert!(b.reserve_review(7 * MIB).await.is_err());
        drop(big);
        let b = budget_with(10, 5_000);
        let big = b.reserve_review(7 * MIB).await.unwrap();
        let waiting = tokio::spawn({
            let b = b.clone();
            async move { b.reserve_review(7 * MIB).await.is_ok() }
        });
        tokio::task::yield_now().await;
        // A small review does not queue behind the large one waiting.
        let _small: Vec<_> =
            futures::future::join_all((0..10).map(|_| b.reserve_review(100 * 1024)))
                .await
                .into_iter()
                .map(|r| r.unwrap())
                .collect();
        drop(big);
        assert!(waiting.await.unwrap());
    }
}
