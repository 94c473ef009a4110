"""Parquet files streamed a few megabytes at a time: one text column as Arrow string arrays.

Only the ``field`` column is read, in record batches of about ``target_bytes`` of text (the
row count comes from the file's own column statistics), so memory stays bounded by one batch
and the page being decoded, whatever the file's size. A file that is not Parquet, is truncated
or corrupt, or lacks the column raises ValueError naming the file (and the columns it has).
"""

from __future__ import annotations

import os
from typing import Iterator

from .arrow import require_pyarrow

DEFAULT_BATCH_BYTES = 8 << 20


def parquet_batches(path: str, field: str = "text", *, target_bytes: int = DEFAULT_BATCH_BYTES) -> Iterator[tuple[object, int]]:
    """(the ``field`` column of the next rows as a pyarrow array, bytes of the file consumed so
    far, estimated from the rows read) for the whole file."""
    require_pyarrow()
    import pyarrow as pa
    import pyarrow.parquet as pq

    size = os.path.getsize(path)
    try:
        handle = pq.ParquetFile(path)
        names = handle.schema_arrow.names
        if field not in names:
            raise ValueError(f"{path}: no column {field!r} (columns: {', '.join(names) or 'none'})")
        rows = handle.metadata.num_rows
        batch_rows = _batch_rows(handle, field, rows, target_bytes)
        done = 0
        for batch in handle.iter_batches(batch_size=batch_rows, columns=[field], use_threads=False):
            done += batch.num_rows
            yield batch.column(0), size * done // max(rows, 1)
    except (pa.ArrowException, OSError, EOFError) as exc:
        if isinstance(exc, FileNotFoundError):
            raise
        raise ValueError(f"{path}: not a readable Parquet file ({exc})") from None


def _batch_rows(handle, field: str, rows: int, target_bytes: int) -> int:
    """Rows per batch for about ``target_bytes`` of the column's text (uncompressed)."""
    meta = handle.metadata
    text_bytes = 0
    for g in range(meta.num_row_groups):
        group = meta.row_group(g)
        for c in range(group.num_columns):
            column = group.column(c)
            if column.path_in_schema == field:
                text_bytes += column.total_uncompressed_size
    per_row = max(1, text_bytes // max(rows, 1))
    return int(max(1, min(1 << 20, target_bytes // per_row)))
