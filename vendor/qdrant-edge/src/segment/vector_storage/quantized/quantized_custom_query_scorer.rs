use std::borrow::Cow;
use std::marker::PhantomData;

use crate::common::counter::hardware_counter::HardwareCounterCell;
use crate::common::types::{PointOffsetType, ScoreType};

use crate::segment::data_types::primitive::PrimitiveVectorElement;
use crate::segment::data_types::vectors::{DenseVector, TypedDenseVector};
use crate::segment::spaces::metric::Metric;
use crate::segment::types::QuantizationConfig;
use crate::segment::vector_storage::query::{Query, TransformInto};
use crate::segment::vector_storage::query_scorer::QueryScorer;

pub struct QuantizedCustomQueryScorer<'a, TElement, TMetric, TEncodedVectors, TQuery>
where
    TElement: PrimitiveVectorElement,
    TMetric: Metric<TElement>,
    TEncodedVectors: crate::quantization::EncodedVectors,
    TQuery: Query<TEncodedVectors::EncodedQuery>,
{
    query: TQuery,
    quantized_storage: &'a TEncodedVectors,
    metric: PhantomData<TMetric>,
    element: PhantomData<TElement>,
    hardware_counter: HardwareCounterCell,
}

impl<'a, TElement, TMetric, TEncodedVectors, TQuery>
    QuantizedCustomQueryScorer<'a, TElement, TMetric, TEncodedVectors, TQuery>
where
    TElement: PrimitiveVectorElement,
    TMetric: Metric<TElement>,
    TEncodedVectors: crate::quantization::EncodedVectors,
    TQuery: Query<TEncodedVectors::EncodedQuery>,
{
    pub fn new<TOriginalQuery, TInputQuery>(
        raw_query: TInputQuery,
        quantized_storage: &'a TEncodedVectors,
        quantization_config: &QuantizationConfig,
        mut hardware_counter: HardwareCounterCell,
    ) -> Self
    where
        TOriginalQuery: Query<TypedDenseVector<TElement>>
            + TransformInto<TQuery, TypedDenseVector<TElement>, TEncodedVectors::EncodedQuery>
            + Clone,
        TInputQuery: Query<DenseVector>
            + TransformInto<TOriginalQuery, DenseVector, TypedDenseVector<TElement>>,
    {
        let original_query: TOriginalQuery = raw_query
            .transform(|raw_vector| {
                let preprocessed_vector = TMetric::preprocess(raw_vector);
                let original_vector = TypedDenseVector::from(TElement::slice_from_float_cow(
                    Cow::Owned(preprocessed_vector),
                ));
                Ok(original_vector)
            })
            .unwrap();
        let query: TQuery = original_query
            .transform(|original_vector| {
                let original_vector_prequantized = TElement::quantization_preprocess(
                    quantization_config,
                    TMetric::distance(),
                    Cow::Borrowed(&original_vector),
                );
                Ok(quantized_storage.encode_query(&original_vector_prequantized))
            })
            .unwrap();

        hardware_counter.set_cpu_multiplier(size_of::<TElement>());

        hardware_counter.set_vector_io_read_multiplier(usize::from(quantized_storage.is_on_disk()));

        Self {
            query,
            quantized_storage,
            metric: PhantomData,
            element: PhantomData,
            hardware_counter,
        }
    }
}

impl<TElement, TMetric, TEncodedVectors, TQuery> QueryScorer
    for QuantizedCustomQueryScorer<'_, TElement, TMetric, TEncodedVectors, TQuery>
where
    TElement: PrimitiveVectorElement,
    TMetric: Metric<TElement>,
    TEncodedVectors: crate::quantization::EncodedVectors,
    TQuery: Query<TEncodedVectors::EncodedQuery>,
{
    type TVector = [TElement];

    fn score_stored_batch(&self, ids: &[PointOffsetType], scores: &mut [ScoreType]) {
        debug_assert_eq!(ids.len(), scores.len());

        let storage = self.quantized_storage;

        self.hardware_counter
            .vector_io_read()
            .incr_delta(ids.len() * storage.quantized_vector_size());

        for (idx, vector) in storage.iter_batch(ids) {
            scores[idx] = self.query.score_by(|query| {
                storage.score(query, &vector, &self.hardware_counter) // inhibit `rustfmt`
            });
        }
    }

    fn score_stored(&self, idx: PointOffsetType) -> ScoreType {
        // account for read outside of `score_by` because the closure is called once per example
        self.hardware_counter
            .vector_io_read()
            .incr_delta(self.quantized_storage.quantized_vector_size());
        self.query.score_by(|this| {
            self.quantized_storage
                .score_point(this, idx, &self.hardware_counter)
        })
    }

    fn score(&self, _v2: &[TElement]) -> ScoreType {
        unimplemented!("This method is not expected to be called for quantized scorer");
    }

    fn score_internal(&self, _point_a: PointOffsetType, _point_b: PointOffsetType) -> ScoreType {
        unimplemented!("Custom scorer compares against multiple vectors, not just one")
    }

    type SupportsBytes = TEncodedVectors::SupportsBytes;
    fn score_bytes(&self, enabled: Self::SupportsBytes, bytes: &[u8]) -> ScoreType {
        self.query.score_by(|this| {
            self.quantized_storage
                .score_bytes(enabled, this, bytes, &self.hardware_counter)
        })
    }
}
