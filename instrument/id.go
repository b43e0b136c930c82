package instrument

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"

	"github.com/google/uuid"
)

// ID is a CPID or a span ID: a UUID, written in its canonical 36-character
// lower-case form. The zero ID means "none".
type ID [16]byte

// NewID returns a random (version 4) UUID. It is the default ID generator of
// a Tracer.
func NewID() ID {
	u, err := uuid.NewRandom()
	if err != nil {
		// crypto/rand does not fail on supported platforms. If it ever does,
		// the runtime's ChaCha8 generator still gives a unique version 4 UUID
		// rather than stopping the controller.
		binary.LittleEndian.PutUint64(u[:8], rand.Uint64())
		binary.LittleEndian.PutUint64(u[8:], rand.Uint64())
		u[6] = u[6]&0x0f | 0x40
		u[8] = u[8]&0x3f | 0x80
	}
	return ID(u)
}

// errBadID is returned by ParseID; callers of Extract see it wrapped in an
// *AnnotationError.
var errBadID = errors.New("not a UUID in canonical form")

// ParseID parses a UUID in canonical form (8-4-4-4-12 hexadecimal digits,
// either case). It rejects the nil UUID, which cannot name a change.
func ParseID(s string) (ID, error) {
	if len(s) != 36 || s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' {
		return ID{}, errBadID
	}
	var id ID
	var bad byte
	for i, p := range idPos {
		hi, lo := hexVal[s[p]], hexVal[s[p+1]]
		bad |= hi | lo
		id[i] = hi<<4 | lo
	}
	if bad > 0x0f || id.IsZero() {
		return ID{}, errBadID
	}
	return id, nil
}

// idPos is where each byte of an ID starts in its canonical form.
var idPos = [16]uint8{0, 2, 4, 6, 9, 11, 14, 16, 19, 21, 24, 26, 28, 30, 32, 34}

// hexVal maps a hexadecimal digit to its value and anything else to 0xff.
var hexVal = func() (t [256]byte) {
	for i := range t {
		t[i] = 0xff
	}
	for i := byte(0); i < 10; i++ {
		t['0'+i] = i
	}
	for i := byte(0); i < 6; i++ {
		t['a'+i], t['A'+i] = 10+i, 10+i
	}
	return t
}()

// IsZero reports whether id is the zero ID.
func (id ID) IsZero() bool { return id == ID{} }

// String returns id in canonical lower-case form, or "" for the zero ID.
func (id ID) String() string {
	if id.IsZero() {
		return ""
	}
	var b [36]byte
	id.put(&b)
	return string(b[:])
}

// hexPairs holds the two lower-case hexadecimal digits of every byte.
var hexPairs = func() (t [256][2]byte) {
	const digits = "0123456789abcdef"
	for i := range t {
		t[i] = [2]byte{digits[i>>4], digits[i&0x0f]}
	}
	return t
}()

// put writes the canonical form of id into b.
func (id ID) put(b *[36]byte) {
	b[8], b[13], b[18], b[23] = '-', '-', '-', '-'
	for i, p := range idPos {
		*(*[2]byte)(b[p : p+2]) = hexPairs[id[i]]
	}
}

// MarshalText implements encoding.TextMarshaler.
func (id ID) MarshalText() ([]byte, error) {
	if id.IsZero() {
		return []byte{}, nil
	}
	var b [36]byte
	id.put(&b)
	return b[:], nil
}

// UnmarshalText implements encoding.TextUnmarshaler; empty text is the zero ID.
func (id *ID) UnmarshalText(b []byte) error {
	if len(b) == 0 {
		*id = ID{}
		return nil
	}
	v, err := ParseID(string(b))
	if err != nil {
		return fmt.Errorf("parse id %q: %w", b, err)
	}
	*id = v
	return nil
}
