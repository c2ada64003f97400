"""Private plumbing shared by several packages: lazy namespaces, model fingerprints, BLAS
threads."""
