// Package qgen makes the executable queries of a TPC-H-like run and
// computes its QphH-like metrics.
//
// It does what the TPC's qgen tool does for the benchmark, for PostgreSQL:
// it substitutes parameters into the 22 queries of the specification,
// either the specification's validation parameters (Validation, qgen -d)
// or parameters drawn from the specification's ranges (Random, Stream).
// The draws reproduce qgen's: the same generator, seeding, order of draws
// and word lists (dbgen/rnd.c, qgen.c, varsub.c, permute.c and dists.dss
// of the TPC-H tools), so a seed gives the parameters qgen gives for it.
// Stream gives a query stream's 22 queries in the specification's order
// for that stream (dbgen/permute.h).
//
// The metrics are those of clause 5.4: Power, Throughput and QphH, and the
// geometric mean of query times that HammerDB reports instead (GeoMean).
// Results computed here are TPC-H-like and QphH-like, not TPC-H results:
// those require an audited run of the full specification.
//
// Nothing in the package is shared between calls: a Rand is the only state
// and belongs to its caller.
package qgen
