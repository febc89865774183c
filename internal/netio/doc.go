// Package netio is the socket I/O of the database sessions that drive a
// benchmark's load, shared by every target: a net.Conn that does blocking
// read(2) and write(2) on its socket (NewDirectConn), its descriptor for
// poll(2) and the CPU its replies arrive on, and the scheduling discipline
// of a thread that drives such connections (Thread, EnsureProcs). It knows
// no database protocol.
package netio
