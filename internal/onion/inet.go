package onion

import (
	"bytes"
	"net/netip"
	"strconv"
	"strings"
)

// An inet value is stored as PostgreSQL's inet_send writes it, less its
// is_cidr and length bytes: the family (pgInet4 or pgInet6), the mask
// bits, then the 4 or 16 address bytes. Equal values have equal bytes,
// as network_eq says (family, mask and every address bit).

const (
	pgInet4 = 2 // PGSQL_AF_INET
	pgInet6 = 3 // PGSQL_AF_INET6
)

func inetValue(family, bits byte, addr []byte) Value {
	b := make([]byte, 0, 2+len(addr))
	return BytesValue(append(append(b, family, bits), addr...))
}

// parseInetText is inet_in (cidr_in when cidr is set) for the forms this
// package implements: an IPv4 address of four decimal octets or an IPv6
// address, each with an optional /bits. Other forms inet_net_pton accepts
// (abbreviated or hexadecimal IPv4, white space) are refused, not
// misread. A cidr without /bits covers its whole address (four octets
// widen any classful mask to 32 bits), and may have no bit set right of
// its mask.
func parseInetText(s string, cidr bool) (Value, error) {
	name := "inet"
	if cidr {
		name = "cidr"
	}
	addrText, bitsText, hasBits := strings.Cut(s, "/")
	refused := func() (Value, error) {
		return Value{}, refuse(codeInvalidTextRep, "invalid input syntax for type %s: \"%s\"", name, s)
	}
	if addrText == "" || strings.ContainsAny(s, " \t\n\r\v\f%") || hasBits && bitsText == "" {
		return refused()
	}
	var family byte
	var addr []byte
	switch {
	case strings.Contains(addrText, ":"):
		a, err := netip.ParseAddr(addrText)
		if err != nil || !a.Is6() || a.Zone() != "" {
			return refused()
		}
		b := a.As16()
		family, addr = pgInet6, b[:]
	default:
		parts := strings.Split(addrText, ".")
		if len(parts) != 4 {
			return refused()
		}
		for _, p := range parts {
			n, err := strconv.Atoi(p)
			if err != nil || n < 0 || n > 255 || p != strconv.Itoa(n) {
				return refused()
			}
			addr = append(addr, byte(n))
		}
		family = pgInet4
	}
	max := 8 * len(addr)
	bits := max
	if hasBits {
		n, err := strconv.Atoi(bitsText)
		if err != nil || bitsText != strconv.Itoa(n) {
			return refused()
		}
		if n < 0 || n > max {
			return Value{}, pgErr(codeInvalidTextRep, "invalid input syntax for type %s: \"%s\"", name, s)
		}
		bits = n
	}
	if cidr && !maskCovers(addr, bits) {
		e := pgErr(codeInvalidTextRep, "invalid cidr value: \"%s\"", s)
		e.Detail = "Value has bits set to right of mask."
		return Value{}, e
	}
	return inetValue(family, byte(bits), addr), nil
}

// maskCovers reports whether no bit of addr right of its first bits is
// set (addressOK).
func maskCovers(addr []byte, bits int) bool {
	for i, b := range addr {
		switch {
		case 8*(i+1) <= bits:
		case 8*i >= bits:
			if b != 0 {
				return false
			}
		default:
			if b&(0xff>>(bits-8*i)) != 0 {
				return false
			}
		}
	}
	return true
}

// parseInetBinary is inet_recv (cidr_recv when cidr is set); the
// is_cidr byte is ignored, as network_recv does.
func parseInetBinary(b []byte, cidr bool) (Value, error) {
	name := "inet"
	if cidr {
		name = "cidr"
	}
	// inet_recv reads byte by byte (pq_getmsgbyte).
	if len(b) < 4 {
		return Value{}, pgErr(codeProtocolViolation, "no data left in message")
	}
	family, bits, n := b[0], b[1], int(b[3])
	size := 4
	switch family {
	case pgInet4:
	case pgInet6:
		size = 16
	default:
		return Value{}, pgErr(codeInvalidBinaryRep, "invalid address family in external \"%s\" value", name)
	}
	if int(bits) > 8*size {
		return Value{}, pgErr(codeInvalidBinaryRep, "invalid bits in external \"%s\" value", name)
	}
	if n != size {
		return Value{}, pgErr(codeInvalidBinaryRep, "invalid length in external \"%s\" value", name)
	}
	switch {
	case len(b) < 4+n:
		return Value{}, pgErr(codeProtocolViolation, "no data left in message")
	case len(b) > 4+n:
		return Value{}, pgErr(codeInvalidBinaryRep, "incorrect binary data format")
	}
	if cidr && !maskCovers(b[4:], int(bits)) {
		e := pgErr(codeInvalidBinaryRep, "invalid external \"cidr\" value")
		e.Detail = "Value has bits set to right of mask."
		return Value{}, e
	}
	return inetValue(family, bits, b[4:]), nil
}

// appendInetBinary is inet_send (cidr_send when cidr is set): family,
// bits, is_cidr, length, address.
func appendInetBinary(dst []byte, v string, cidr bool) []byte {
	isCidr := byte(0)
	if cidr {
		isCidr = 1
	}
	return append(append(dst, v[0], v[1], isCidr, byte(len(v)-2)), v[2:]...)
}

// appendInetText is inet_out (cidr_out when cidr is set): the address,
// then /bits unless all of it (always for a cidr).
func appendInetText(dst []byte, v string, cidr bool) []byte {
	bits, addr := int(v[1]), []byte(v[2:])
	if v[0] == pgInet4 {
		dst = netip.AddrFrom4([4]byte(addr)).AppendTo(dst)
	} else {
		dst = appendIPv6(dst, [16]byte(addr))
	}
	if bits != 8*len(addr) || cidr {
		dst = append(append(dst, '/'), strconv.Itoa(bits)...)
	}
	return dst
}

// appendIPv6 is inet_net_ntop's IPv6 form: lower-case hex groups, the
// first longest run of two or more zero groups as "::", and the last 32
// bits as a dotted quad after a prefix of ::ffff: or of zeros (IPv4-mapped
// and IPv4-compatible addresses, but not :: and ::1).
func appendIPv6(dst []byte, a [16]byte) []byte {
	var w [8]uint16
	for i := range w {
		w[i] = uint16(a[2*i])<<8 | uint16(a[2*i+1])
	}
	best, bestLen := -1, 0
	for i := 0; i < 8; {
		if w[i] != 0 {
			i++
			continue
		}
		j := i
		for j < 8 && w[j] == 0 {
			j++
		}
		if j-i > bestLen {
			best, bestLen = i, j-i
		}
		i = j
	}
	if bestLen < 2 {
		best = -1
	}
	for i := 0; i < 8; i++ {
		if best >= 0 && i >= best && i < best+bestLen {
			if i == best {
				dst = append(dst, ':')
			}
			continue
		}
		if i != 0 {
			dst = append(dst, ':')
		}
		// The embedded IPv4 address.
		if i == 6 && best == 0 && (bestLen == 6 || bestLen == 5 && w[5] == 0xffff) {
			return netip.AddrFrom4([4]byte(a[12:])).AppendTo(dst)
		}
		dst = strconv.AppendUint(dst, uint64(w[i]), 16)
	}
	if best >= 0 && best+bestLen == 8 {
		dst = append(dst, ':')
	}
	return dst
}

// compareInet is network_cmp: family, then the network bits both masks
// cover, then the mask length, then every address bit.
func compareInet(a, b string) int {
	if a[0] != b[0] {
		return int(a[0]) - int(b[0])
	}
	if c := bitCompare(a[2:], b[2:], min(int(a[1]), int(b[1]))); c != 0 {
		return c
	}
	if a[1] != b[1] {
		return int(a[1]) - int(b[1])
	}
	return bytes.Compare([]byte(a[2:]), []byte(b[2:]))
}

// bitCompare compares the first n bits of a and b.
func bitCompare(a, b string, n int) int {
	full := n / 8
	if c := strings.Compare(a[:full], b[:full]); c != 0 {
		return c
	}
	if rest := n % 8; rest > 0 {
		mask := byte(0xff) << (8 - rest)
		x, y := a[full]&mask, b[full]&mask
		if x != y {
			return int(x) - int(y)
		}
	}
	return 0
}
