package pg

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
)

// Replies reads the server's replies to the statements a worker sends
// itself (through the connection's pgproto3.Frontend) straight from the
// socket, up to ReadyForQuery. It stands in for pgconn's ReceiveMessage in
// the hot path: one message at a time through pgconn takes its busy lock,
// the message reader, a decoded struct per message and a type switch, which
// was about a third of the driver's own (user-space) CPU time in a
// select-only run, while a round trip's replies (BindComplete, DataRow,
// CommandComplete, ReadyForQuery) need no decoding except an error's.
//
// While a worker uses Replies, pgconn must not read from the connection:
// the worker sends everything on the connection itself after the
// statements were prepared (including ROLLBACK), so pgconn's reader is
// empty and stays so. What pgconn would have tracked from those messages
// is not needed here (parameter changes, notices, the transaction status),
// except a FATAL error, after which Replies closes the connection as pgconn
// does.
//
// The zero value is ready; Reset it for a new connection.
type Replies struct {
	buf        []byte
	start, end int  // unread bytes are buf[start:end]
	tx         byte // the transaction status of the last ReadyForQuery
	// KeepRow: Collect keeps each statement's last row (Result.Row), as
	// pgbench's \gset and \aset store it.
	KeepRow bool
}

// repliesBuf is the initial buffer: a round trip's replies in one read.
const repliesBuf = 8 << 10

// repliesMaxMsg bounds the length of one message (replies to the
// benchmark's statements are tens of bytes, an error a few hundred).
const repliesMaxMsg = 1 << 20

// ErrProtocol is returned (wrapped) for a reply that is not one a
// statement of the extended or simple query protocol can produce; the
// connection is closed. Such an error counts as a lost connection
// (driver.IsConnError).
var ErrProtocol error = protocolError("unexpected message from the server")

type protocolError string

func (e protocolError) Error() string { return string(e) }

// ConnectionLost marks the error as a lost connection for
// driver.IsConnError.
func (e protocolError) ConnectionLost() bool { return true }

// Reset drops what is buffered, for a new connection.
func (r *Replies) Reset() { r.start, r.end, r.tx = 0, 0, 'I' }

// TxStatus is the transaction status the last ReadyForQuery reported: 'I'
// idle, 'T' in a transaction, 'E' in a failed transaction.
func (r *Replies) TxStatus() byte {
	if r.tx == 0 {
		return 'I'
	}
	return r.tx
}

// Result is one statement's result in a round trip: its rows, the first
// row's first two columns when they are 4-byte values (int4 in binary
// format; else 0), and with Replies.KeepRow the last row as it came (a
// DataRow body: see RowValues), in a buffer the Result keeps from one
// round trip to the next.
type Result struct {
	Rows int
	V    [2]int32
	Row  []byte
	// Desc is the statement's RowDescription body (see FieldNames), with
	// Replies.KeepRow: a statement of a simple query has one, a prepared
	// statement's Execute does not.
	Desc []byte
}

// UntilReady reads pc's replies up to and including ReadyForQuery. It
// returns the first error the server reported (a *pgconn.PgError), else an
// I/O error from the socket (the connection is then unusable), else nil.
// A FATAL error from the server or a protocol violation also closes pc.
func (r *Replies) UntilReady(pc *pgconn.PgConn) error { return r.Collect(pc, nil) }

// Collect is UntilReady that also records each statement's result in res,
// one per statement of the round trip in the order sent (statements past
// len(res) are not recorded). The entries are reset first.
func (r *Replies) Collect(pc *pgconn.PgConn, res []Result) error {
	for i := range res {
		res[i] = Result{Row: res[i].Row[:0]}
	}
	k := 0 // the statement whose replies are being read
	c := pc.Conn()
	var first error
	for {
		typ, body, err := r.next(c)
		if err != nil {
			return r.lost(pc, err, first)
		}
		switch typ {
		case 'D': // DataRow
			if k < len(res) {
				r.row(&res[k], body)
			}
		case 'C', 'I': // CommandComplete, EmptyQueryResponse: the statement ended
			k++
		case 'Z': // ReadyForQuery
			r.ready(body)
			return first
		case '2', '1', '3', 'T', 'n', 's', 'N', 'S', 'A': // see ignored
		default:
			if done, err := r.other(pc, typ, body, &first); done {
				return err
			}
		}
	}
}

// CollectAll is Collect for a round trip whose number of statements is not
// known before the replies come (a simple query of several statements): it
// records every statement's result, growing *res as needed, with its
// RowDescription (Result.Desc, with KeepRow), and returns how many there
// were.
func (r *Replies) CollectAll(pc *pgconn.PgConn, res *[]Result) (int, error) {
	all := (*res)[:0]
	defer func() { *res = all }()
	// The statement whose replies are being read, made when its first
	// reply comes.
	at := func(k int) *Result {
		if k == len(all) {
			if k < cap(all) {
				all = all[:k+1]
				all[k] = Result{Row: all[k].Row[:0], Desc: all[k].Desc[:0]}
			} else {
				all = append(all, Result{})
			}
		}
		return &all[k]
	}
	k := 0
	c := pc.Conn()
	var first error
	for {
		typ, body, err := r.next(c)
		if err != nil {
			return k, r.lost(pc, err, first)
		}
		switch typ {
		case 'D': // DataRow
			r.row(at(k), body)
		case 'T': // RowDescription
			if x := at(k); r.KeepRow {
				x.Desc = append(x.Desc[:0], body...)
			}
		case 'C', 'I': // CommandComplete, EmptyQueryResponse: the statement ended
			at(k)
			k++
		case 'Z': // ReadyForQuery
			r.ready(body)
			return k, first
		case '2', '1', '3', 'n', 's', 'N', 'S', 'A': // see ignored
		default:
			if done, err := r.other(pc, typ, body, &first); done {
				return k, err
			}
		}
	}
}

// row records a DataRow body in x.
func (r *Replies) row(x *Result, body []byte) {
	x.Rows++
	if x.Rows == 1 {
		firstInts(body, &x.V)
	}
	if r.KeepRow {
		x.Row = append(x.Row[:0], body...)
	}
}

// lost is the error of a read that failed: the connection is unusable
// after a failed read or a bad message (pgconn closes it too), and an error
// the server reported before going away (e.g. FATAL: terminating
// connection) says more than the end of the stream.
func (r *Replies) lost(pc *pgconn.PgConn, err, first error) error {
	_ = pc.Close(context.Background())
	if first != nil && !errors.Is(err, ErrProtocol) {
		return first
	}
	return err
}

// ready records the transaction status of a ReadyForQuery body.
func (r *Replies) ready(body []byte) {
	if len(body) > 0 {
		r.tx = body[0]
	}
}

// other handles an error or an unexpected reply: it reports done, with
// the error, at a FATAL error and at a message no statement can bring
// (the connection is then closed), and keeps the first error the server
// reported in *first otherwise. The replies Collect and CollectAll ignore
// (ignored) are BindComplete, ParseComplete, CloseComplete,
// RowDescription (Collect), NoData, PortalSuspended, NoticeResponse,
// ParameterStatus and NotificationResponse.
func (r *Replies) other(pc *pgconn.PgConn, typ byte, body []byte, first *error) (bool, error) {
	switch typ {
	case 'E': // ErrorResponse
		var m pgproto3.ErrorResponse
		if err := m.Decode(body); err != nil {
			_ = pc.Close(context.Background())
			return true, fmt.Errorf("%w: bad error response: %v", ErrProtocol, err)
		}
		pe := pgconn.ErrorResponseToPgError(&m)
		if pe.Severity == "FATAL" || pe.Severity == "PANIC" {
			// The server closes the connection after it.
			_ = pc.Close(context.Background())
			return true, pe
		}
		if *first == nil {
			*first = pe
		}
	default:
		_ = pc.Close(context.Background())
		return true, fmt.Errorf("%w: type %q", ErrProtocol, typ)
	}
	return false, nil
}

// FieldNames appends the column names of a RowDescription body (Result.Desc)
// to names.
func FieldNames(desc []byte, names []string) []string {
	if len(desc) < 2 {
		return names
	}
	n := int(binary.BigEndian.Uint16(desc))
	p := 2
	for range n {
		end := bytes.IndexByte(desc[p:], 0)
		if end < 0 {
			return names
		}
		names = append(names, string(desc[p:p+end]))
		// The name's NUL, then the table's OID, the column's number, the
		// type's OID and size, the type modifier and the format code.
		p += end + 1 + 4 + 2 + 4 + 2 + 4 + 2
		if p > len(desc) {
			return names
		}
	}
	return names
}

// RowValues splits a DataRow body into its column values (nil for a
// NULL), appended to vs; the values point into body.
func RowValues(body []byte, vs [][]byte) [][]byte {
	if len(body) < 2 {
		return vs
	}
	n := int(binary.BigEndian.Uint16(body))
	p := 2
	for col := 0; col < n; col++ {
		if len(body) < p+4 {
			return vs
		}
		l := int(int32(binary.BigEndian.Uint32(body[p:])))
		p += 4
		if l < 0 {
			vs = append(vs, nil)
			continue
		}
		if len(body) < p+l {
			return vs
		}
		vs = append(vs, body[p:p+l:p+l])
		p += l
	}
	return vs
}

// firstInts reads the first two columns of a DataRow body into v when
// they are 4 bytes long (binary int4).
func firstInts(body []byte, v *[2]int32) {
	if len(body) < 2 {
		return
	}
	n := int(binary.BigEndian.Uint16(body))
	p := 2
	for col := 0; col < n && col < len(v); col++ {
		if len(body) < p+4 {
			return
		}
		l := int(int32(binary.BigEndian.Uint32(body[p:])))
		p += 4
		if l < 0 {
			continue // NULL
		}
		if len(body) < p+l {
			return
		}
		if l == 4 {
			v[col] = int32(binary.BigEndian.Uint32(body[p:]))
		}
		p += l
	}
}

// next returns the next message's type and body (valid until the next
// call), reading from c as needed.
func (r *Replies) next(c net.Conn) (byte, []byte, error) {
	if err := r.fill(c, 5); err != nil {
		return 0, nil, err
	}
	typ := r.buf[r.start]
	n := int(int32(binary.BigEndian.Uint32(r.buf[r.start+1:])))
	if n < 4 || n > repliesMaxMsg {
		return 0, nil, fmt.Errorf("%w: type %q, length %d", ErrProtocol, typ, n)
	}
	if err := r.fill(c, 1+n); err != nil {
		return 0, nil, err
	}
	body := r.buf[r.start+5 : r.start+1+n]
	r.start += 1 + n
	return typ, body, nil
}

// fill reads until at least n bytes are unread.
func (r *Replies) fill(c net.Conn, n int) error {
	if r.start == r.end {
		r.start, r.end = 0, 0
	}
	if r.end-r.start >= n {
		return nil
	}
	if len(r.buf) < repliesBuf {
		r.buf = make([]byte, repliesBuf)
	}
	if len(r.buf)-r.start < n {
		// Move the unread bytes to the front, into a larger buffer if
		// needed.
		buf := r.buf
		if len(buf) < n {
			buf = make([]byte, n)
		}
		r.end = copy(buf, r.buf[r.start:r.end])
		r.start, r.buf = 0, buf
	}
	for empty := 0; r.end-r.start < n; {
		m, err := c.Read(r.buf[r.end:])
		r.end += m
		if err != nil && r.end-r.start < n {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF // pgconn's word for it
			}
			return err
		}
		if m == 0 && err == nil {
			if empty++; empty > 100 {
				return io.ErrNoProgress
			}
		}
	}
	return nil
}
