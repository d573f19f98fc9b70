use std::borrow::Cow;
use std::ops::ControlFlow;

use crate::common::counter::hardware_counter::HardwareCounterCell;
use crate::common::counter::referenced_counter::HwMetricRefCounter;
use crate::common::generic_consts::{AccessPattern, Sequential};
use crate::common::universal_io::UniversalRead;
use lz4_flex::compress_prepend_size;

use crate::gridstore::Result;
use crate::gridstore::blob::Blob;
use crate::gridstore::config::{Compression, StorageConfig};
use crate::gridstore::error::GridstoreError;
use crate::gridstore::pages::Pages;
use crate::gridstore::tracker::{PointOffset, Tracker, ValuePointer};

#[inline]
pub(super) fn compress_lz4(value: &[u8]) -> Vec<u8> {
    compress_prepend_size(value)
}

#[inline]
pub(super) fn decompress_lz4(value: &[u8]) -> Vec<u8> {
    lz4_flex::decompress_size_prepended(value).unwrap()
}

/// A non-owning view into gridstore data.
///
/// Holds borrowed references to pages and tracker, and contains all reading logic.
/// Generic over the storage backend `S` for both pages and tracker (same as [`Pages<S>`] and
/// [`Tracker<S>`]).
///
/// Constructed from either [`super::Gridstore`] or [`super::GridstoreReader`].
pub struct GridstoreView<'a, V, S: UniversalRead> {
    pub(super) config: &'a StorageConfig,
    pub(super) tracker: &'a Tracker<S>,
    pub(super) pages: &'a Pages<S>,
    pub(super) _value_type: std::marker::PhantomData<V>,
}

impl<'a, V, S: UniversalRead> GridstoreView<'a, V, S> {
    pub(crate) fn new(
        config: &'a StorageConfig,
        tracker: &'a Tracker<S>,
        pages: &'a Pages<S>,
    ) -> Self {
        Self {
            config,
            tracker,
            pages,
            _value_type: std::marker::PhantomData,
        }
    }

    pub fn max_point_offset(&self) -> PointOffset {
        self.tracker.pointer_count()
    }

    fn get_pointer(&self, point_offset: PointOffset) -> Result<Option<ValuePointer>> {
        self.tracker.get(point_offset)
    }

    /// Return the storage size in bytes (approximate: total page capacity).
    pub fn get_storage_size_bytes(&self) -> usize {
        self.pages.num_pages() * self.config.page_size_bytes
    }

    /// Read raw value from the pages, considering that values can span more than one page.
    pub fn read_from_pages<P: AccessPattern>(
        &self,
        pointer: ValuePointer,
    ) -> Result<Cow<'_, [u8]>> {
        self.pages.read_from_pages::<P>(pointer, self.config)
    }
}

impl<'a, V: Blob, S: UniversalRead> GridstoreView<'a, V, S> {
    pub(super) fn compress(&self, value: Vec<u8>) -> Vec<u8> {
        match self.config.compression {
            Compression::None => value,
            Compression::LZ4 => compress_lz4(&value),
        }
    }

    pub(super) fn decompress<'val>(&self, value: Cow<'val, [u8]>) -> Cow<'val, [u8]> {
        match self.config.compression {
            Compression::None => value,
            Compression::LZ4 => decompress_lz4(&value).into(),
        }
    }

    /// Get the value for a given point offset.
    pub fn get_value<P: AccessPattern>(
        &self,
        point_offset: PointOffset,
        hw_counter: &HardwareCounterCell,
    ) -> Result<Option<V>> {
        let Some(pointer) = self.get_pointer(point_offset)? else {
            return Ok(None);
        };

        let raw = self.read_from_pages::<P>(pointer)?;
        hw_counter.payload_io_read_counter().incr_delta(raw.len());

        let decompressed = self.decompress(raw);
        let value = V::from_bytes(&decompressed);

        Ok(Some(value))
    }

    pub fn for_each_in_batch<P, F, E>(
        &self,
        point_offsets: &[PointOffset],
        mut callback: F,
        hw_counter: &HardwareCounterCell,
    ) -> std::result::Result<(), E>
    where
        P: AccessPattern,
        F: FnMut(usize, Option<V>) -> std::result::Result<(), E>,
        E: From<GridstoreError>,
    {
        // Resolve all pointers in a single batched tracker read so async backends
        // (e.g. io_uring) can fetch them in parallel.
        let pointers = self.tracker.get_batch(point_offsets)?;

        // Stream decoded values straight to the caller — no intermediate buffer.
        // The callback `idx` maps 1-to-1 to `point_offsets`; missing offsets are
        // delivered as `None`.
        self.pages
            .read_batch_from_pages::<P, _, E>(pointers, self.config, |idx, raw_opt| {
                let value = raw_opt.map(|raw| {
                    hw_counter.payload_io_read_counter().incr_delta(raw.len());
                    let decompressed = self.decompress(raw);
                    V::from_bytes(&decompressed)
                });
                callback(idx, value)
            })
    }

    /// Iterate over all the values in the storage.
    ///
    /// Stops when any of these conditions is true:
    /// - the callback returns `Ok(false)`,
    /// - it has iterated `max_iters` times
    /// - there are no more results.
    ///
    /// ## Control Flow
    /// Returns `Ok(Continue(next_offset))` if iteration can be continued starting from `next_offset`
    ///  (i.e. `max_iters` was reached, but there are more results).
    ///
    /// Returns `Ok(Break())` when any of:
    /// - `callback` returned false
    /// - there are no more results.
    ///
    /// Returns `Err(e)` if reading from the tracker fails (no silent skip).
    pub fn iter<F, E>(
        &self,
        from_id: PointOffset,
        max_id: PointOffset,
        max_iters: usize,
        mut callback: F,
        hw_counter: HwMetricRefCounter,
    ) -> std::result::Result<ControlFlow<(), PointOffset>, E>
    where
        F: FnMut(PointOffset, V) -> std::result::Result<bool, E>,
        E: From<GridstoreError>,
    {
        let mut nth = 0;
        for (point_offset, res) in self.tracker.iter_pointers(from_id, max_id) {
            let pointer = match res {
                Ok(Some(p)) => p,
                Ok(None) => continue,
                Err(e) => return Err(e.into()),
            };

            if nth == max_iters {
                return Ok(ControlFlow::Continue(point_offset));
            }
            nth += 1;

            let raw = self.read_from_pages::<Sequential>(pointer)?;

            hw_counter.incr_delta(raw.len());

            let decompressed = self.decompress(raw);
            let value = V::from_bytes(&decompressed);
            if !callback(point_offset, value)? {
                return Ok(ControlFlow::Break(()));
            }
        }
        Ok(ControlFlow::Break(()))
    }
}
