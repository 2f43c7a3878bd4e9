"""PyFlink's connector modules, mapped onto panes' own sources and sinks (``file_system``)."""
