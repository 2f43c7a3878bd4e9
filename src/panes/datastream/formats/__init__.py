"""Row formats of messages (PyFlink's ``pyflink.datastream.formats``): JSON (``panes.datastream.formats.json``)
and CSV (``panes.datastream.formats.csv``) rows as serialization schemas for connectors that move bytes (Kafka).
A row is read against a declared row type (``Types.ROW_NAMED(...)``, a Spark DDL string) the way panes reads a
line of a JSON or CSV file (``panes.datastream.text_files``), so a message and a file line that hold the same
text give the same value."""

from panes.datastream.formats.rows import row_record_type

__all__ = ["row_record_type"]
