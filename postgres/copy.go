package postgres

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"

	"github.com/jackc/pgx/v5"
)

// copyBuf is rows in COPY's binary format, built by hand: pgx's CopyFrom
// boxes every value in an interface and describes the table first (a
// round trip); a batch of a tailer is thousands of rows of a few known
// types.
type copyBuf struct{ b []byte }

// header starts the data; each row then starts with row(columns).
func (c *copyBuf) header() {
	c.b = append(c.b[:0], "PGCOPY\n\377\r\n\000"...)
	c.b = binary.BigEndian.AppendUint32(c.b, 0) // flags
	c.b = binary.BigEndian.AppendUint32(c.b, 0) // header extension
}

func (c *copyBuf) row(columns int) { c.b = binary.BigEndian.AppendUint16(c.b, uint16(columns)) }

func (c *copyBuf) null() { c.b = binary.BigEndian.AppendUint32(c.b, math.MaxUint32) } // length -1

// int8 is a BIGINT.
func (c *copyBuf) int8(v int64) {
	c.b = binary.BigEndian.AppendUint32(c.b, 8)
	c.b = binary.BigEndian.AppendUint64(c.b, uint64(v))
}

// int8OrNull is a BIGINT, NULL for 0.
func (c *copyBuf) int8OrNull(v int64) {
	if v == 0 {
		c.null()
		return
	}
	c.int8(v)
}

// text is a TEXT or a BYTEA: the binary form of both is the bytes.
func (c *copyBuf) text(s string) {
	c.b = binary.BigEndian.AppendUint32(c.b, uint32(len(s)))
	c.b = append(c.b, s...)
}

func (c *copyBuf) bytes(v []byte) {
	c.b = binary.BigEndian.AppendUint32(c.b, uint32(len(v)))
	c.b = append(c.b, v...)
}

// textOrNull is a TEXT, NULL for "".
func (c *copyBuf) textOrNull(s string) {
	if s == "" {
		c.null()
		return
	}
	c.text(s)
}

// json is raw JSON stored as TEXT, NULL when absent (cpid.JSONText).
func (c *copyBuf) json(v []byte) {
	if len(v) == 0 || string(v) == "null" {
		c.null()
		return
	}
	c.bytes(v)
}

// strings is a list stored as a JSON array in a TEXT, NULL for none
// (cpid.JSONStrings).
func (c *copyBuf) strings(ss []string) {
	if len(ss) == 0 {
		c.null()
		return
	}
	at := len(c.b)
	c.b = append(c.b, 0, 0, 0, 0)
	c.b = append(c.b, '[')
	for i, s := range ss {
		if i > 0 {
			c.b = append(c.b, ',')
		}
		c.b = appendJSONString(c.b, s)
	}
	c.b = append(c.b, ']')
	binary.BigEndian.PutUint32(c.b[at:], uint32(len(c.b)-at-4))
}

// send copies the rows into table's columns and resets the buffer.
func (c *copyBuf) send(ctx context.Context, tx pgx.Tx, table, columns string) error {
	c.b = binary.BigEndian.AppendUint16(c.b, math.MaxUint16) // trailer: -1
	_, err := tx.Conn().PgConn().CopyFrom(ctx, bytes.NewReader(c.b), "COPY "+table+" ("+columns+") FROM STDIN (FORMAT binary)")
	c.b = c.b[:0]
	if err != nil {
		return fmt.Errorf("copy into %s: %w", table, err)
	}
	return nil
}

// appendJSONString appends s as a JSON string, as encoding/json writes it
// (HTML characters escaped, invalid UTF-8 replaced), so that the stored
// text is the same as cpid.JSONStrings's.
func appendJSONString(b []byte, s string) []byte {
	simple := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x80 || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			simple = false
			break
		}
	}
	if simple {
		b = append(b, '"')
		b = append(b, s...)
		return append(b, '"')
	}
	return append(b, jsonString(s)...)
}

func jsonString(s string) []byte {
	b, _ := json.Marshal(s)
	return b
}
