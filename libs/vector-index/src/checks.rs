//! Checks every adapter makes the same way before a write reaches its engine
//! and after a result comes back from it.

use mnemo_domain::{MemoryId, TenantId};

use crate::{Point, PointPayload, VectorIndexError};

pub(crate) fn check_dense(expected: usize, vector: &[f32]) -> Result<(), VectorIndexError> {
    if vector.len() != expected {
        return Err(VectorIndexError::DimensionMismatch {
            expected,
            actual: vector.len(),
        });
    }
    Ok(())
}

pub(crate) fn check_payload_tenant(
    tenant: &TenantId,
    id: &MemoryId,
    payload: &PointPayload,
) -> Result<(), VectorIndexError> {
    if &payload.tenant != tenant {
        return Err(VectorIndexError::TenantMismatch {
            id: *id,
            expected: tenant.clone(),
            found: payload.tenant.clone(),
        });
    }
    Ok(())
}

/// A point an upsert may write: the caller's tenant, the index's dimension,
/// finite values (the engine would store a NaN and make every cosine with
/// it NaN).
pub(crate) fn check_point(
    tenant: &TenantId,
    dimension: usize,
    point: &Point,
) -> Result<(), VectorIndexError> {
    check_payload_tenant(tenant, &point.id, &point.payload)?;
    check_dense(dimension, &point.dense)?;
    if point.dense.iter().any(|v| !v.is_finite()) {
        return Err(VectorIndexError::InvalidPoint {
            id: point.id,
            reason: "dense vector holds a non-finite value".into(),
        });
    }
    Ok(())
}

/// A point that came back from a tenant-filtered query but names another
/// tenant would mean the filter failed: drop it loudly rather than leak it.
pub(crate) fn same_tenant(tenant: &TenantId, payload: &PointPayload, id: &MemoryId) -> bool {
    if &payload.tenant == tenant {
        return true;
    }
    tracing::error!(tenant_id = %tenant, point_id = %id, "tenant filter returned a foreign point; dropped");
    false
}
