//! Results as Arrow record batches, handed to Python through the Arrow
//! PyCapsule interface (`__arrow_c_stream__`): pyarrow, polars or pandas
//! read them without a copy through text. `tasks` comes from typed
//! columns; the small tables (organizations, users, comparisons, an
//! experiment's tables) from their cells, each column typed as integers
//! when every cell is one, as floats when every cell is a number, as text
//! otherwise (an empty cell is a null).

use arrow_array::ffi_stream::FFI_ArrowArrayStream;
use arrow_array::{
    ArrayRef, Float64Array, Int64Array, RecordBatch, RecordBatchIterator, StringArray, UInt32Array,
    UInt64Array,
};
use arrow_schema::{ArrowError, DataType, Field, Schema, SchemaRef};
use fairsched_report::{Table, TaskColumns};
use pyo3::prelude::*;
use pyo3::types::PyCapsule;
use std::sync::Arc;

/// One table: its schema and batches.
#[derive(Clone)]
pub struct Batches {
    pub schema: SchemaRef,
    pub batches: Vec<RecordBatch>,
}

impl Batches {
    pub fn rows(&self) -> usize {
        self.batches.iter().map(|b| b.num_rows()).sum()
    }

    /// Several runs' tables as one, with a first `policy` column; a run
    /// whose schema differs (a column typed otherwise) is cast to text.
    pub fn concat(parts: Vec<(String, Batches)>) -> Result<Batches, ArrowError> {
        let Some((_, first)) = parts.first() else {
            return Ok(Batches::from_table(&Table::new(["policy"])));
        };
        let mut fields = vec![Arc::new(Field::new("policy", DataType::Utf8, false))];
        fields.extend(first.schema.fields().iter().cloned());
        let schema = Arc::new(Schema::new(fields));
        let mut batches = Vec::new();
        for (name, b) in &parts {
            if b.schema.fields().len() + 1 != schema.fields().len() {
                return Err(ArrowError::SchemaError(format!(
                    "the runs' tables have different columns ({name})"
                )));
            }
            for batch in &b.batches {
                let n = batch.num_rows();
                let mut cols: Vec<ArrayRef> = vec![Arc::new(StringArray::from(vec![name.as_str(); n]))];
                for (i, col) in batch.columns().iter().enumerate() {
                    let want = schema.field(i + 1).data_type();
                    if col.data_type() == want {
                        cols.push(col.clone());
                    } else {
                        cols.push(cast_to(col, want)?);
                    }
                }
                batches.push(RecordBatch::try_new(schema.clone(), cols)?);
            }
        }
        Ok(Batches { schema, batches })
    }

    /// A text table's cells, typed per column.
    pub fn from_table(t: &Table) -> Batches {
        let names: Vec<&str> = t.columns.iter().map(|(n, _)| n.as_str()).collect();
        let mut fields = Vec::with_capacity(names.len());
        let mut cols: Vec<ArrayRef> = Vec::with_capacity(names.len());
        for (i, name) in names.iter().enumerate() {
            let cells: Vec<&str> = t
                .rows
                .iter()
                .map(|r| r.get(i).map(String::as_str).unwrap_or(""))
                .collect();
            let filled = cells.iter().filter(|c| !c.is_empty());
            let (ty, col): (DataType, ArrayRef) =
                if filled.clone().count() > 0 && filled.clone().all(|c| c.parse::<i64>().is_ok()) {
                    let v: Int64Array = cells.iter().map(|c| c.parse::<i64>().ok()).collect();
                    (DataType::Int64, Arc::new(v))
                } else if filled.clone().count() > 0 && filled.clone().all(|c| c.parse::<f64>().is_ok()) {
                    let v: Float64Array = cells.iter().map(|c| c.parse::<f64>().ok()).collect();
                    (DataType::Float64, Arc::new(v))
                } else {
                    let v: StringArray = cells.iter().map(|c| (!c.is_empty()).then_some(*c)).collect();
                    (DataType::Utf8, Arc::new(v))
                };
            fields.push(Field::new(*name, ty, true));
            cols.push(col);
        }
        let schema = Arc::new(Schema::new(fields));
        let batches = if names.is_empty() {
            Vec::new()
        } else {
            vec![RecordBatch::try_new(schema.clone(), cols).expect("columns of one length")]
        };
        Batches { schema, batches }
    }

    /// `tasks.csv`'s rows, typed.
    pub fn from_tasks(c: TaskColumns) -> Batches {
        fn f(name: &str, ty: DataType, nullable: bool) -> Field {
            Field::new(name, ty, nullable)
        }
        let fields = vec![
            f("task", DataType::UInt64, false),
            f("job", DataType::UInt64, false),
            f("user", DataType::Int64, false),
            f("org", DataType::UInt32, false),
            f("machine", DataType::UInt32, true),
            f("slot", DataType::UInt32, true),
            f("slots", DataType::UInt32, false),
            f("submit", DataType::Float64, false),
            f("start", DataType::Float64, true),
            f("end", DataType::Float64, false),
            f("wait", DataType::Float64, true),
            f("response", DataType::Float64, false),
            f("bsld", DataType::Float64, true),
            f("outcome", DataType::Utf8, false),
            f("attempts", DataType::UInt32, false),
            f("log_status", DataType::Int64, true),
        ];
        let schema = Arc::new(Schema::new(fields));
        let cols: Vec<ArrayRef> = vec![
            Arc::new(UInt64Array::from(c.task)),
            Arc::new(UInt64Array::from(c.job)),
            Arc::new(Int64Array::from(c.user)),
            Arc::new(UInt32Array::from(c.org)),
            Arc::new(UInt32Array::from(c.machine)),
            Arc::new(UInt32Array::from(c.slot)),
            Arc::new(UInt32Array::from(c.slots)),
            Arc::new(Float64Array::from(c.submit)),
            Arc::new(Float64Array::from(c.start)),
            Arc::new(Float64Array::from(c.end)),
            Arc::new(Float64Array::from(c.wait)),
            Arc::new(Float64Array::from(c.response)),
            Arc::new(Float64Array::from(c.bsld)),
            Arc::new(StringArray::from(c.outcome)),
            Arc::new(UInt32Array::from(c.attempts)),
            Arc::new(Int64Array::from(
                c.log_status
                    .into_iter()
                    .map(|s| s.map(i64::from))
                    .collect::<Vec<_>>(),
            )),
        ];
        let batch = RecordBatch::try_new(schema.clone(), cols).expect("columns of one length");
        Batches {
            schema,
            batches: vec![batch],
        }
    }
}

/// A column cast to another type through its text (only when two runs'
/// tables typed a column differently: a column of integers in one run,
/// of decimals in another).
fn cast_to(col: &ArrayRef, want: &DataType) -> Result<ArrayRef, ArrowError> {
    let text: Vec<Option<String>> = (0..col.len())
        .map(|i| {
            if col.is_null(i) {
                return None;
            }
            let a = col.as_any();
            if let Some(x) = a.downcast_ref::<Int64Array>() {
                Some(x.value(i).to_string())
            } else if let Some(x) = a.downcast_ref::<Float64Array>() {
                Some(x.value(i).to_string())
            } else {
                a.downcast_ref::<StringArray>().map(|x| x.value(i).to_string())
            }
        })
        .collect();
    Ok(match want {
        DataType::Int64 => Arc::new(
            text.iter()
                .map(|t| t.as_deref().and_then(|t| t.parse::<i64>().ok()))
                .collect::<Int64Array>(),
        ),
        DataType::Float64 => Arc::new(
            text.iter()
                .map(|t| t.as_deref().and_then(|t| t.parse::<f64>().ok()))
                .collect::<Float64Array>(),
        ),
        _ => Arc::new(text.iter().map(|t| t.as_deref()).collect::<StringArray>()),
    })
}

/// A table Python reads through the Arrow PyCapsule interface.
#[pyclass(frozen, module = "fairsched", name = "ArrowTable")]
pub struct ArrowTable {
    pub(crate) inner: Batches,
}

#[pymethods]
impl ArrowTable {
    /// The Arrow C stream of this table (PyCapsule interface): what
    /// `pyarrow.table(t)` or `polars.from_arrow(t)` reads. Each call gives
    /// a new stream over the same batches.
    #[pyo3(signature = (requested_schema=None))]
    fn __arrow_c_stream__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        let _ = requested_schema; // the schema is the table's own
        let reader = RecordBatchIterator::new(
            self.inner.batches.clone().into_iter().map(Ok),
            self.inner.schema.clone(),
        );
        let stream = FFI_ArrowArrayStream::new(Box::new(reader));
        PyCapsule::new_with_value(py, stream, c"arrow_array_stream")
    }
    /// Rows.
    #[getter]
    fn num_rows(&self) -> usize {
        self.inner.rows()
    }
    /// Column names.
    #[getter]
    fn column_names(&self) -> Vec<String> {
        self.inner
            .schema
            .fields()
            .iter()
            .map(|f| f.name().clone())
            .collect()
    }
    fn __len__(&self) -> usize {
        self.inner.rows()
    }
    fn __repr__(&self) -> String {
        format!(
            "ArrowTable({} rows: {})",
            self.inner.rows(),
            self.column_names().join(", ")
        )
    }
}
