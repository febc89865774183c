package mariadb

import (
	"database/sql/driver"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"reflect"

	"github.com/go-sql-driver/mysql"
)

// wire speaks the MariaDB client/server protocol on a worker session's
// socket for its measured statements: COM_STMT_PREPARE, COM_STMT_EXECUTE
// in the binary protocol and COM_QUERY, each a request and its reply read
// straight from the socket into one buffer, without a driver's per-query
// allocations (a result set's column definitions, its rows object, a
// []driver.Value per row). go-sql-driver/mysql makes the connection (the
// handshake and every authentication plugin) and runs its set-up; then
// the session owns the socket, whose next command starts a new sequence
// as every command does. Measured against sysbench 1.0 on one managed
// MariaDB (docs/benchmarks.md), the driver's own statement path cost 35
// to 50 µs of client CPU per point select where sysbench spends 26.
//
// The protocol is MariaDB's (and MySQL's) as documented at
// https://mariadb.com/kb/en/clientserver-protocol/: packets of a 3-byte
// length and a sequence number; OK (0x00), ERR (0xff) and EOF (0xfe)
// packets; result sets of column definitions and rows.
type wire struct {
	nc           net.Conn
	rbuf         []byte
	rpos, rend   int
	big          []byte // a payload of more than one packet
	wbuf         []byte
	seq          byte
	deprecateEOF bool // CLIENT_DEPRECATE_EOF: no EOF after column definitions, an OK ends a result set
	cacheMeta    bool // MARIADB_CLIENT_CACHE_METADATA: an execute's reply may omit them
	status       uint16
	affected     uint64
	broken       error // the connection's state is unknown: nothing more may be sent
}

// Server status flags (of OK and EOF packets).
const (
	statusInTrans     = 0x0001
	statusMoreResults = 0x0008
)

// Capability bits read from the driver's connection.
const (
	capDeprecateEOF = 1 << 24 // CLIENT_DEPRECATE_EOF
	capSSL          = 1 << 11 // CLIENT_SSL
	capCompress     = 1 << 5  // CLIENT_COMPRESS
	extCacheMeta    = 1 << 4  // MARIADB_CLIENT_CACHE_METADATA (extended capabilities)
)

// Column types of the binary protocol.
const (
	typeDecimal    = 0x00
	typeTiny       = 0x01
	typeShort      = 0x02
	typeLong       = 0x03
	typeFloat      = 0x04
	typeDouble     = 0x05
	typeNull       = 0x06
	typeTimestamp  = 0x07
	typeLongLong   = 0x08
	typeInt24      = 0x09
	typeDate       = 0x0a
	typeTime       = 0x0b
	typeDateTime   = 0x0c
	typeYear       = 0x0d
	typeNewDate    = 0x0e
	typeBit        = 0x10
	typeTimestamp2 = 0x11
	typeDateTime2  = 0x12
	typeTime2      = 0x13
	typeVarString  = 0xfd
	typeString     = 0xfe
	flagUnsigned   = 0x0020
)

// errMalformed is a reply the session cannot read: the connection is lost
// to it (a statement in flight may have run).
var errMalformed = fmt.Errorf("malformed packet from the server: %w", io.ErrUnexpectedEOF)

// newWire takes over conn's socket nc. The capabilities the driver
// negotiated are read from its connection (a go-sql-driver/mysql
// *mysqlConn: capabilities, extCapabilities; TestWireCapabilities fails
// if a new version of the driver renames them).
func newWire(conn driver.Conn, nc net.Conn) (*wire, error) {
	v := reflect.ValueOf(conn)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return nil, fmt.Errorf("unexpected MariaDB connection %T", conn)
	}
	caps, ext := v.Elem().FieldByName("capabilities"), v.Elem().FieldByName("extCapabilities")
	if !caps.IsValid() || !ext.IsValid() || nc == nil {
		return nil, fmt.Errorf("cannot read the capabilities of the MariaDB connection %T", conn)
	}
	if caps.Uint()&(capSSL|capCompress) != 0 {
		// The session reads plain, uncompressed packets from the socket.
		return nil, fmt.Errorf("the MariaDB connection is encrypted or compressed, which the worker sessions do not speak")
	}
	return &wire{nc: nc, rbuf: make([]byte, 16<<10), wbuf: make([]byte, 0, 4<<10),
		deprecateEOF: caps.Uint()&capDeprecateEOF != 0, cacheMeta: ext.Uint()&extCacheMeta != 0}, nil
}

// fail marks the connection unusable after an I/O or protocol error.
func (w *wire) fail(err error) error {
	if w.broken == nil {
		w.broken = err
	}
	return err
}

// fill makes n bytes available at rbuf[rpos:].
func (w *wire) fill(n int) error {
	if w.rend-w.rpos >= n {
		return nil
	}
	if w.rpos > 0 {
		w.rend = copy(w.rbuf, w.rbuf[w.rpos:w.rend])
		w.rpos = 0
	}
	if n > len(w.rbuf) {
		b := make([]byte, max(n, 2*len(w.rbuf)))
		copy(b, w.rbuf[:w.rend])
		w.rbuf = b
	}
	for w.rend < n {
		k, err := w.nc.Read(w.rbuf[w.rend:])
		w.rend += k
		if err != nil && w.rend < n {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return w.fail(err)
		}
	}
	return nil
}

// read returns the next packet's payload, valid until the next read.
func (w *wire) read() ([]byte, error) {
	if w.broken != nil {
		return nil, w.broken
	}
	w.big = w.big[:0]
	for {
		if err := w.fill(4); err != nil {
			return nil, err
		}
		h := w.rbuf[w.rpos : w.rpos+4]
		n := int(uint32(h[0]) | uint32(h[1])<<8 | uint32(h[2])<<16)
		if h[3] != w.seq {
			return nil, w.fail(fmt.Errorf("packet %d out of sequence (%d expected): %w", h[3], w.seq, io.ErrUnexpectedEOF))
		}
		w.seq++
		w.rpos += 4
		if err := w.fill(n); err != nil {
			return nil, err
		}
		p := w.rbuf[w.rpos : w.rpos+n]
		w.rpos += n
		if n < 0xffffff && len(w.big) == 0 {
			if n == 0 {
				return nil, w.fail(errMalformed)
			}
			return p, nil
		}
		w.big = append(w.big, p...)
		if n < 0xffffff {
			return w.big, nil
		}
	}
}

// begin starts a command in wbuf (after room for a packet header).
func (w *wire) begin(cmd byte) {
	w.wbuf = append(w.wbuf[:0], 0, 0, 0, 0, cmd)
	w.seq = 0
}

// send writes the command in wbuf, split into packets of at most
// 0xffffff bytes.
func (w *wire) send() error {
	if w.broken != nil {
		return w.broken
	}
	payload := w.wbuf[4:]
	if len(payload) < 0xffffff {
		n := len(payload)
		w.wbuf[0], w.wbuf[1], w.wbuf[2], w.wbuf[3] = byte(n), byte(n>>8), byte(n>>16), w.seq
		w.seq++
		if _, err := w.nc.Write(w.wbuf); err != nil {
			return w.fail(err)
		}
		return nil
	}
	for {
		n := min(len(payload), 0xffffff)
		h := []byte{byte(n), byte(n >> 8), byte(n >> 16), w.seq}
		w.seq++
		if _, err := w.nc.Write(append(h, payload[:n]...)); err != nil {
			return w.fail(err)
		}
		payload = payload[n:]
		if n < 0xffffff {
			return nil
		}
	}
}

// lenenc reads a length-encoded integer at b[i:]; null is 0xfb.
func lenenc(b []byte, i int) (v uint64, next int, null bool, err error) {
	if i >= len(b) {
		return 0, i, false, errMalformed
	}
	switch c := b[i]; {
	case c < 0xfb:
		return uint64(c), i + 1, false, nil
	case c == 0xfb:
		return 0, i + 1, true, nil
	case c == 0xfc && i+3 <= len(b):
		return uint64(binary.LittleEndian.Uint16(b[i+1:])), i + 3, false, nil
	case c == 0xfd && i+4 <= len(b):
		return uint64(b[i+1]) | uint64(b[i+2])<<8 | uint64(b[i+3])<<16, i + 4, false, nil
	case c == 0xfe && i+9 <= len(b):
		return binary.LittleEndian.Uint64(b[i+1:]), i + 9, false, nil
	}
	return 0, i, false, errMalformed
}

// lenstr reads a length-encoded string at b[i:].
func lenstr(b []byte, i int) (s []byte, next int, null bool, err error) {
	n, i, null, err := lenenc(b, i)
	if err != nil || null {
		return nil, i, null, err
	}
	if uint64(len(b)-i) < n {
		return nil, i, false, errMalformed
	}
	return b[i : i+int(n)], i + int(n), false, nil
}

func appendLenenc(b []byte, n uint64) []byte {
	switch {
	case n < 0xfb:
		return append(b, byte(n))
	case n < 1<<16:
		return append(b, 0xfc, byte(n), byte(n>>8))
	case n < 1<<24:
		return append(b, 0xfd, byte(n), byte(n>>8), byte(n>>16))
	}
	return binary.LittleEndian.AppendUint64(append(b, 0xfe), n)
}

// errPacket is an ERR packet as the driver's error type.
func errPacket(p []byte) error {
	if len(p) < 3 {
		return errMalformed
	}
	e := &mysql.MySQLError{Number: binary.LittleEndian.Uint16(p[1:3])}
	msg := p[3:]
	if len(msg) >= 6 && msg[0] == '#' {
		copy(e.SQLState[:], msg[1:6])
		msg = msg[6:]
	}
	e.Message = string(msg)
	return e
}

// ok reads an OK packet (or an EOF that ends a result set with
// CLIENT_DEPRECATE_EOF, whose header is 0xfe).
func (w *wire) ok(p []byte) error {
	var err error
	var i int
	if w.affected, i, _, err = lenenc(p, 1); err != nil {
		return w.fail(err)
	}
	if _, i, _, err = lenenc(p, i); err != nil {
		return w.fail(err)
	}
	if i+2 <= len(p) {
		w.status = binary.LittleEndian.Uint16(p[i:])
	}
	return nil
}

// eof reads an EOF packet (warnings, then status).
func (w *wire) eof(p []byte) {
	if len(p) >= 5 {
		w.status = binary.LittleEndian.Uint16(p[3:])
	}
}

// isEOF: a packet that ends a list of column definitions or rows (an EOF,
// or with CLIENT_DEPRECATE_EOF an OK with the EOF header).
func isEOF(p []byte) bool { return len(p) > 0 && p[0] == 0xfe && len(p) < 0xffffff }

// column is what a session needs of a column definition.
type column struct {
	name     string
	typ      byte
	unsigned bool
	decimals byte
}

// readColumn parses a column definition packet (protocol 4.1).
func readColumn(p []byte, keepName bool) (column, error) {
	i := 0
	var name []byte
	var err error
	for k := 0; k < 6; k++ { // catalog, schema, table, org_table, name, org_name
		var s []byte
		if s, i, _, err = lenstr(p, i); err != nil {
			return column{}, err
		}
		if k == 4 {
			name = s
		}
	}
	if _, i, _, err = lenenc(p, i); err != nil { // length of the fixed fields (0x0c)
		return column{}, err
	}
	if i+10 > len(p) {
		return column{}, errMalformed
	}
	c := column{typ: p[i+6], unsigned: binary.LittleEndian.Uint16(p[i+7:])&flagUnsigned != 0, decimals: p[i+9]}
	if keepName {
		c.name = string(name)
	}
	return c, nil
}

// columns reads n column definitions (and the EOF after them without
// CLIENT_DEPRECATE_EOF) into cols (reused), keeping names if asked.
func (w *wire) columns(n int, cols []column, names bool) ([]column, error) {
	cols = cols[:0]
	for k := 0; k < n; k++ {
		p, err := w.read()
		if err != nil {
			return cols, err
		}
		c, err := readColumn(p, names)
		if err != nil {
			return cols, w.fail(err)
		}
		cols = append(cols, c)
	}
	if !w.deprecateEOF {
		p, err := w.read()
		if err != nil {
			return cols, err
		}
		if !isEOF(p) {
			return cols, w.fail(errMalformed)
		}
	}
	return cols, nil
}

// prepared statement on the server.
type serverStmt struct {
	id      uint32
	nparams int
	cols    []column
}

// prepare runs COM_STMT_PREPARE.
func (w *wire) prepare(q string) (serverStmt, error) {
	w.begin(0x16)
	w.wbuf = append(w.wbuf, q...)
	if err := w.send(); err != nil {
		return serverStmt{}, err
	}
	p, err := w.read()
	if err != nil {
		return serverStmt{}, err
	}
	if p[0] == 0xff {
		return serverStmt{}, errPacket(p)
	}
	if p[0] != 0 || len(p) < 12 {
		return serverStmt{}, w.fail(errMalformed)
	}
	st := serverStmt{id: binary.LittleEndian.Uint32(p[1:]), nparams: int(binary.LittleEndian.Uint16(p[7:]))}
	ncols := int(binary.LittleEndian.Uint16(p[5:]))
	if st.nparams > 0 {
		if _, err := w.columns(st.nparams, nil, false); err != nil {
			return st, err
		}
	}
	if ncols > 0 {
		if st.cols, err = w.columns(ncols, nil, true); err != nil {
			return st, err
		}
	}
	return st, nil
}

// reply is what the session keeps of a statement's reply.
type reply struct {
	rows   int
	row    [][]byte
	ints   [2]int32
	fields []string // the columns' names (queries only)
	more   bool     // another result follows (a multi-statement query)
}

// sendExecute sends COM_STMT_EXECUTE with args (nil, int64 or []byte);
// result reads its reply.
func (w *wire) sendExecute(st *serverStmt, args []any) error {
	w.begin(0x17)
	w.wbuf = binary.LittleEndian.AppendUint32(w.wbuf, st.id)
	w.wbuf = append(w.wbuf, 0)                           // no cursor
	w.wbuf = binary.LittleEndian.AppendUint32(w.wbuf, 1) // iteration count
	if n := len(args); n > 0 {
		nb := len(w.wbuf)
		for k := 0; k < (n+7)/8; k++ {
			w.wbuf = append(w.wbuf, 0)
		}
		w.wbuf = append(w.wbuf, 1) // the types follow
		for k, a := range args {
			switch a.(type) {
			case int64:
				w.wbuf = append(w.wbuf, typeLongLong, 0)
			case []byte:
				w.wbuf = append(w.wbuf, typeVarString, 0)
			default: // nil, or a value the session never sets
				w.wbuf[nb+k/8] |= 1 << (k % 8)
				w.wbuf = append(w.wbuf, typeNull, 0)
			}
		}
		for _, a := range args {
			switch v := a.(type) {
			case int64:
				w.wbuf = binary.LittleEndian.AppendUint64(w.wbuf, uint64(v))
			case []byte:
				w.wbuf = append(appendLenenc(w.wbuf, uint64(len(v))), v...)
			}
		}
	}
	return w.send()
}

// query runs COM_QUERY (text protocol) and reads its first result.
func (w *wire) query(q string, r *reply, keepRow bool) error {
	w.begin(0x03)
	w.wbuf = append(w.wbuf, q...)
	if err := w.send(); err != nil {
		return err
	}
	return w.result(nil, false, r, keepRow)
}

// drain reads the results that follow r (a CALL's final OK, the
// statements after the first of a text command), so that the next command
// starts on a clean connection.
func (w *wire) drain(r *reply, binaryRows bool) error {
	var rest reply
	more := r.more
	for more {
		if err := w.result(nil, binaryRows, &rest, false); err != nil {
			return err
		}
		more = rest.more
	}
	return nil
}

// result reads a reply: OK, ERR or a result set (binary rows for an
// execute, text rows for a query). An error leaves the connection usable
// when the server reported it (ERR) and unusable otherwise. st is the
// executed statement: its column definitions are the ones the server
// sent last (with cached metadata it sends them again only when they
// change).
func (w *wire) result(st *serverStmt, binaryRows bool, r *reply, keepRow bool) error {
	r.rows, r.row, r.ints, r.fields, r.more = 0, r.row[:0], [2]int32{}, r.fields[:0], false
	p, err := w.read()
	if err != nil {
		return err
	}
	switch p[0] {
	case 0x00:
		if err := w.ok(p); err != nil {
			return err
		}
		r.rows = int(w.affected)
		r.more = w.status&statusMoreResults != 0
		return nil
	case 0xff:
		return errPacket(p)
	case 0xfb:
		// LOAD DATA LOCAL INFILE asks for a file: none is given (an
		// empty packet, in the command's sequence).
		w.wbuf = append(w.wbuf[:0], 0, 0, 0, 0)
		if err := w.send(); err != nil {
			return err
		}
		p, err := w.read()
		if err != nil {
			return err
		}
		if p[0] == 0xff {
			return errPacket(p)
		}
		if err := w.ok(p); err != nil {
			return err
		}
		err = errors.New("LOAD DATA LOCAL INFILE is not supported in a script (use an init file's load, or LOAD DATA INFILE from the server's files)")
		if w.status&statusMoreResults != 0 {
			// The statements after it are not read: the connection goes.
			return w.fail(fmt.Errorf("%w: %w", err, io.ErrUnexpectedEOF))
		}
		return err
	}
	n, i, _, err := lenenc(p, 0)
	if err != nil {
		return w.fail(err)
	}
	follows := true
	if w.cacheMeta && binaryRows && i < len(p) {
		follows = p[i] == 1
	}
	var cols []column
	if st != nil {
		cols = st.cols
	}
	if follows {
		// The reply's own definitions (a prepared statement's change
		// with its table's schema, or are absent for CALL); kept for the
		// executions that come without them.
		fresh, err := w.columns(int(n), nil, true)
		if err != nil {
			return err
		}
		cols = fresh
		if st != nil && binaryRows {
			st.cols = fresh
		}
	} else if !w.deprecateEOF {
		p, err := w.read()
		if err != nil {
			return err
		}
		if !isEOF(p) {
			return w.fail(errMalformed)
		}
	}
	if len(cols) != int(n) {
		return w.fail(errMalformed)
	}
	for _, c := range cols {
		r.fields = append(r.fields, c.name)
	}
	for {
		p, err := w.read()
		if err != nil {
			return err
		}
		if p[0] == 0xff {
			return errPacket(p)
		}
		// A row never starts with 0xfe in a packet shorter than 0xffffff
		// bytes (a text row would start with a string of 16 MB).
		if isEOF(p) {
			if w.deprecateEOF {
				if err := w.ok(p); err != nil {
					return err
				}
			} else {
				w.eof(p)
			}
			r.more = w.status&statusMoreResults != 0
			return nil
		}
		first := r.rows == 0
		r.rows++
		if !keepRow && !first {
			continue
		}
		var err2 error
		if binaryRows {
			err2 = binaryRow(p, cols, r, first, keepRow)
		} else {
			err2 = textRow(p, cols, r, first, keepRow)
		}
		if err2 != nil {
			return w.fail(err2)
		}
	}
}

// closeStmt sends COM_STMT_CLOSE (the server does not reply); a failed
// write breaks the wire, and the next statement reports it.
func (w *wire) closeStmt(id uint32) {
	w.begin(0x19)
	w.wbuf = binary.LittleEndian.AppendUint32(w.wbuf, id)
	_ = w.send()
}
