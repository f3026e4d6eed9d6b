//! Hindsight: stable error signatures and the store of fixes that cured them (being written).
