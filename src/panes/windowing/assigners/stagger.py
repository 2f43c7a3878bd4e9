"""``WindowStagger``: how the start of windows is shifted per operator instance (Flink's ``WindowStagger``)."""

from __future__ import annotations

import random
from enum import Enum


class WindowStagger(Enum):
    """ALIGNED: no shift. RANDOM: a random shift in ``[0, size)``. NATURAL: the processing time at the first
    element, so windows start when the operator first sees data."""

    ALIGNED = "ALIGNED"
    RANDOM = "RANDOM"
    NATURAL = "NATURAL"

    def get_stagger_offset(self, current_processing_time: int, size: int) -> int:
        if self is WindowStagger.ALIGNED:
            return 0
        if self is WindowStagger.RANDOM:
            return int(random.random() * size)
        return current_processing_time % size
