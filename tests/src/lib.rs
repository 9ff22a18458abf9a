//! # vat-tests
//!
//! Cross-crate and cross-backend tests of the workspace live in `tests/tests/`. This library is empty:
//! shared test helpers will be added here when more than one test file needs them.
