package egress

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"net/netip"
	"strings"
	"testing"
)

func TestAddrRefused(t *testing.T) {
	own := []netip.Addr{netip.MustParseAddr("203.0.114.7"), netip.MustParseAddr("2a01:4f8::7")}
	test := []netip.Prefix{netip.MustParsePrefix("127.0.0.2/32")}
	tests := []struct {
		addr string
		want string // "" allowed
	}{
		{"93.184.215.14", ""},
		{"2606:2800:21f:cb07:6820:80da:af6b:8b2c", ""},
		{"127.0.0.2", ""}, // a test upstream
		{"127.0.0.1", "loopback"},
		{"127.255.255.254", "loopback"},
		{"::1", "loopback"},
		{"0.0.0.0", "unspecified"},
		{"::", "unspecified"},
		{"169.254.169.254", "link-local"},
		{"fe80::1", "link-local"},
		{"fe80::1%eth0", "link-local"},
		{"10.1.2.3", "private"},
		{"172.16.0.1", "private"},
		{"172.31.255.255", "private"},
		{"192.168.1.1", "private"},
		{"100.64.0.1", "carrier-grade"},
		{"100.100.100.200", "carrier-grade"}, // a cloud's metadata
		{"192.0.0.192", "reserved"},          // a cloud's metadata
		{"fc00::1", "private"},
		{"fd00:ec2::254", "private"}, // a cloud's metadata over IPv6
		{"224.0.0.251", "multicast"},
		{"ff02::1", "multicast"},
		{"255.255.255.255", "broadcast"},
		{"240.0.0.1", "reserved"},
		{"::ffff:127.0.0.1", "IPv4-mapped"},
		{"::ffff:93.184.215.14", "IPv4-mapped"},
		{"::127.0.0.1", "IPv4-compatible"},
		{"64:ff9b::a9fe:a9fe", "NAT64"},
		{"2002:a9fe:a9fe::1", "6to4"},
		{"2001:0:a9fe:a9fe::1", "Teredo"},
		{"203.0.114.7", "own addresses"},
		{"2a01:4f8::7", "own addresses"},
	}
	for _, tt := range tests {
		got := addrRefused(netip.MustParseAddr(tt.addr), own, test)
		if tt.want == "" && got != "" || !strings.Contains(got, tt.want) {
			t.Errorf("addrRefused(%s) = %q, want %q", tt.addr, got, tt.want)
		}
	}
	if got := addrRefused(netip.Addr{}, nil, nil); got == "" {
		t.Error("the zero address is allowed")
	}
}

func TestScanHead(t *testing.T) {
	tests := []struct {
		head  string
		hosts []string
		err   string
	}{
		{"GET http://a.test/ HTTP/1.1\r\nHost: a.test\r\n\r\n", []string{"a.test"}, ""},
		{"GET http://a.test/ HTTP/1.1\nhost:  a.test \n\n", []string{"a.test"}, ""},
		{"GET http://a.test/ HTTP/1.1\r\nHost: a\r\nHOST: b\r\n\r\n", []string{"a", "b"}, ""},
		{"HTTP/1.1 200 OK\r\nX: y\r\n\r\n", nil, ""},
		{"GET http://a.test/ HTTP/1.1\r\nX: a\r\n b\r\n\r\n", nil, "folded"},
		{"GET http://a.test/ HTTP/1.1\r\nHost : a\r\n\r\n", nil, "not a header"},
		{"GET http://a.test/ HTTP/1.1\r\nX: a\rHost: b\r\n\r\n", nil, "byte"},
		{"GET http://a.test/ HTTP/1.1\r\nX: \x00\r\n\r\n", nil, "byte"},
		{"GET http://a.test/ HTTP/1.1\r\nX: \xff\r\n\r\n", nil, "byte"},
		{"GET\r\n\r\n", nil, "first line"},
		{"GET http://a.test/ HTTP/1.1\r\n" + strings.Repeat("X: y\r\n", maxHeaders+1) + "\r\n", nil, "headers"},
	}
	for _, tt := range tests {
		h, err := scanHead([]byte(tt.head))
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("scanHead(%q) = %v, want error %q", tt.head, err, tt.err)
			}
			continue
		}
		if err != nil || strings.Join(h.hosts, ",") != strings.Join(tt.hosts, ",") {
			t.Errorf("scanHead(%q) = %+v, %v; want hosts %q", tt.head, h, err, tt.hosts)
		}
	}
}

func TestPeekHead(t *testing.T) {
	tests := []struct {
		in, want string
		err      error
	}{
		{"GET / HTTP/1.1\r\nA: b\r\n\r\nbody", "GET / HTTP/1.1\r\nA: b\r\n\r\n", nil},
		{"GET / HTTP/1.1\nA: b\n\nbody", "GET / HTTP/1.1\nA: b\n\n", nil},
		{"GET / HTTP/1.1\nA: b\n\r\nbody", "GET / HTTP/1.1\nA: b\n\r\n", nil},
		{"GET / HTTP/1.1\r\nA: " + strings.Repeat("b", maxHead), "", errHeadTooLarge},
	}
	for _, tt := range tests {
		br := bufio.NewReaderSize(strings.NewReader(tt.in), bufSize)
		got, err := peekHead(br)
		if string(got) != tt.want || !errors.Is(err, tt.err) {
			t.Errorf("peekHead(%.40q) = %q, %v; want %q, %v", tt.in, got, err, tt.want, tt.err)
		}
		if br.Buffered() == 0 && err == nil {
			t.Errorf("peekHead(%.40q) consumed its input", tt.in)
		}
	}
}

// clientHello returns the first record crypto/tls sends for cfg: its
// whole ClientHello.
func clientHello(t testing.TB, cfg *tls.Config) []byte {
	a, b := net.Pipe()
	defer b.Close()
	go func() {
		defer a.Close()
		tls.Client(a, cfg).Handshake()
	}()
	hdr := make([]byte, 5)
	if _, err := io.ReadFull(b, hdr); err != nil {
		t.Fatal(err)
	}
	rec := make([]byte, 5+int(binary.BigEndian.Uint16(hdr[3:])))
	copy(rec, hdr)
	if _, err := io.ReadFull(b, rec[5:]); err != nil {
		t.Fatal(err)
	}
	return rec
}

func TestReadClientHello(t *testing.T) {
	hello := clientHello(t, &tls.Config{ServerName: "Pkgs.Example.org", InsecureSkipVerify: true})
	noSNI := clientHello(t, &tls.Config{InsecureSkipVerify: true})
	// The same hello split over two records, as a client may send it.
	body := hello[5:]
	split := append(record(body[:10]), record(body[10:])...)
	tests := []struct {
		name string
		in   []byte
		want string
		err  string
	}{
		{"crypto/tls", hello, "Pkgs.Example.org", ""},
		{"split over records", split, "Pkgs.Example.org", ""},
		{"no server name", noSNI, "", "without a server name"},
		{"not TLS", []byte("CONNECT a:443 HTTP/1.1\r\n\r\n"), "", "not a TLS"},
		{"alert record", []byte{0x15, 3, 3, 0, 2, 2, 40}, "", "not a TLS"},
		{"truncated", hello[:len(hello)-3], "", "reading"},
		{"empty record", []byte{0x16, 3, 1, 0, 0}, "", "empty"},
		{"record too large", []byte{0x16, 3, 1, 0x40, 0x01}, "", "past"},
		{"not a ClientHello", record([]byte{2, 0, 0, 1, 0}), "", "handshake message"},
		{"extra bytes", record(append(append([]byte{}, body...), 0)), "", "after the ClientHello"},
	}
	for _, tt := range tests {
		raw, name, err := readClientHello(bufio.NewReader(bytes.NewReader(tt.in)))
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%s: %q, %v; want error %q", tt.name, name, err, tt.err)
			}
			continue
		}
		if err != nil || name != tt.want || !bytes.Equal(raw, tt.in) {
			t.Errorf("%s: %q, %v (raw %d of %d bytes); want %q", tt.name, name, err, len(raw), len(tt.in), tt.want)
		}
	}
}

func record(b []byte) []byte {
	return append([]byte{0x16, 3, 1, byte(len(b) >> 8), byte(len(b))}, b...)
}

// TestServerNameOfRefuses builds hellos by hand for what crypto/tls does
// not send: two names, a repeated extension, an encrypted hello.
func TestServerNameOfRefuses(t *testing.T) {
	ext := func(typ uint16, data []byte) []byte {
		b := binary.BigEndian.AppendUint16(nil, typ)
		b = binary.BigEndian.AppendUint16(b, uint16(len(data)))
		return append(b, data...)
	}
	sniData := func(names ...string) []byte {
		var list []byte
		for _, n := range names {
			list = append(list, 0) // host_name
			list = binary.BigEndian.AppendUint16(list, uint16(len(n)))
			list = append(list, n...)
		}
		return append(binary.BigEndian.AppendUint16(nil, uint16(len(list))), list...)
	}
	hello := func(exts ...[]byte) []byte {
		b := append([]byte{3, 3}, make([]byte, 32)...)
		b = append(b, 0)                // session id
		b = append(b, 0, 2, 0x13, 0x01) // one suite
		b = append(b, 1, 0)             // compression
		all := bytes.Join(exts, nil)
		b = binary.BigEndian.AppendUint16(b, uint16(len(all)))
		return append(b, all...)
	}
	tests := []struct {
		name string
		body []byte
		err  string
	}{
		{"one name", hello(ext(0, sniData("a.test"))), ""},
		{"two names", hello(ext(0, sniData("a.test", "b.test"))), "two servers"},
		{"two extensions", hello(ext(0, sniData("a.test")), ext(0, sniData("b.test"))), "repeats"},
		{"encrypted hello", hello(ext(0, sniData("a.test")), ext(0xfe0d, []byte{1})), "ECH"},
		{"name with a space", hello(ext(0, sniData("a .test"))), "printable"},
		{"no extensions", hello(), "without"},
	}
	for _, tt := range tests {
		name, err := serverNameOf(tt.body)
		if tt.err == "" {
			if err != nil || name != "a.test" {
				t.Errorf("%s: %q %v", tt.name, name, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tt.err) {
			t.Errorf("%s: %q %v; want error %q", tt.name, name, err, tt.err)
		}
	}
}
