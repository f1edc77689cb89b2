//! Move inference from e-board placements.
