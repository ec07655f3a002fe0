package egress

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// maxHello bounds a ClientHello across its records. A post-quantum key
// share makes one about 1.8 kB; 16 kB is a record's own limit.
const maxHello = 16 << 10

const (
	recordHandshake   = 0x16
	handshakeHello    = 0x01
	extServerName     = 0x0000
	extEncryptedHello = 0xfe0d
	sniHostName       = 0x00
)

// errNotTLS: the tunnel's first bytes are not a TLS handshake record.
var errNotTLS = errors.New("the tunnel's first bytes are not a TLS ClientHello")

// readClientHello returns the raw records that carry the ClientHello at
// the front of br (consumed; the caller sends them on) and its server name.
// A first byte that is not a handshake record is errNotTLS, and nothing is
// consumed, so the caller can answer in HTTP.
func readClientHello(br *bufio.Reader) (raw []byte, serverName string, err error) {
	first, err := br.Peek(1)
	if err != nil {
		return nil, "", fmt.Errorf("reading the ClientHello: %w", err)
	}
	if first[0] != recordHandshake {
		return nil, "", errNotTLS
	}
	var msg []byte // the handshake message, reassembled from its records
	for {
		hdr, err := br.Peek(5)
		if err != nil {
			return nil, "", fmt.Errorf("reading a TLS record header: %w", err)
		}
		if hdr[0] != recordHandshake || hdr[1] != 0x03 || hdr[2] > 0x04 {
			return nil, "", fmt.Errorf("TLS record type %#02x version %#02x%02x in the ClientHello", hdr[0], hdr[1], hdr[2])
		}
		n := int(binary.BigEndian.Uint16(hdr[3:5]))
		if n == 0 || len(raw)+5+n > maxHello {
			return nil, "", fmt.Errorf("ClientHello record of %d bytes (empty, or past %d in all)", n, maxHello)
		}
		rec := make([]byte, 5+n)
		if _, err := io.ReadFull(br, rec); err != nil {
			return nil, "", fmt.Errorf("reading a TLS record: %w", err)
		}
		raw = append(raw, rec...)
		msg = append(msg, rec[5:]...)
		if len(msg) >= 4 {
			if msg[0] != handshakeHello {
				return nil, "", fmt.Errorf("TLS handshake message %d where a ClientHello belongs", msg[0])
			}
			want := 4 + (int(msg[1])<<16 | int(msg[2])<<8 | int(msg[3]))
			if len(msg) == want {
				name, err := serverNameOf(msg[4:])
				return raw, name, err
			}
			if len(msg) > want {
				return nil, "", errors.New("bytes after the ClientHello in its records")
			}
		}
	}
}

// reader reads big-endian fields from a byte slice; any read past the end
// sets bad, so a parser checks once at the end of each part.
type reader struct {
	b   []byte
	bad bool
}

func (r *reader) take(n int) []byte {
	if r.bad || n < 0 || n > len(r.b) {
		r.bad = true
		return nil
	}
	out := r.b[:n]
	r.b = r.b[n:]
	return out
}

func (r *reader) u8() int { b := r.take(1); return int(at(b, 0)) }
func (r *reader) u16() int {
	b := r.take(2)
	return int(at(b, 0))<<8 | int(at(b, 1))
}
func (r *reader) vec8() []byte  { return r.take(r.u8()) }
func (r *reader) vec16() []byte { return r.take(r.u16()) }

func at(b []byte, i int) byte {
	if i < len(b) {
		return b[i]
	}
	return 0
}

// serverNameOf reads a ClientHello body (after the handshake header) and
// returns its one host_name. No name, two names, two server_name
// extensions, an encrypted ClientHello (whose inner name the proxy cannot
// see) or a malformed hello are errors.
func serverNameOf(body []byte) (string, error) {
	r := &reader{b: body}
	r.take(2 + 32) // legacy_version, random
	r.vec8()       // legacy_session_id
	suites := r.vec16()
	r.vec8() // legacy_compression_methods
	if r.bad || len(suites) == 0 || len(suites)%2 != 0 {
		return "", errors.New("malformed ClientHello")
	}
	if len(r.b) == 0 {
		return "", errors.New("ClientHello without extensions (no server name)")
	}
	exts := &reader{b: r.vec16()}
	if r.bad || len(r.b) != 0 {
		return "", errors.New("malformed ClientHello extensions")
	}
	name, seen := "", map[int]bool{}
	for len(exts.b) > 0 {
		typ, data := exts.u16(), exts.vec16()
		if exts.bad {
			return "", errors.New("malformed ClientHello extension")
		}
		if seen[typ] {
			return "", fmt.Errorf("ClientHello repeats extension %d", typ)
		}
		seen[typ] = true
		switch typ {
		case extEncryptedHello:
			return "", errors.New("encrypted ClientHello (ECH): the server name inside cannot be checked")
		case extServerName:
			n, err := hostNameOf(data)
			if err != nil {
				return "", err
			}
			name = n
		}
	}
	if name == "" {
		return "", errors.New("ClientHello without a server name (SNI)")
	}
	return name, nil
}

// hostNameOf reads a server_name extension holding exactly one host_name.
func hostNameOf(data []byte) (string, error) {
	r := &reader{b: data}
	list := &reader{b: r.vec16()}
	if r.bad || len(r.b) != 0 {
		return "", errors.New("malformed server_name extension")
	}
	name := ""
	for len(list.b) > 0 {
		typ, v := list.u8(), list.vec16()
		if list.bad || typ != sniHostName || len(v) == 0 {
			return "", errors.New("malformed server_name entry")
		}
		if name != "" {
			return "", errors.New("ClientHello names two servers")
		}
		for _, c := range v {
			if c <= ' ' || c >= 0x7f {
				return "", errors.New("server name with a byte that is not printable ASCII")
			}
		}
		name = string(v)
	}
	if name == "" {
		return "", errors.New("empty server_name extension")
	}
	return name, nil
}
