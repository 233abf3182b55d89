// Package keys holds the proxy's keys: the derivation of every data key
// from one root key, and the key store file that keeps the root key (and
// other secrets) wrapped under a master key.
//
// # Key derivation
//
// Every key of every layer of every onion of every column comes from the
// key store's root key by HKDF-SHA256 (RFC 5869):
//
//	PRK = HKDF-Extract(salt = "pgonion/keys/v1", IKM = root key)
//	key = HKDF-Expand(PRK, info, size)
//
// where info encodes the purpose unambiguously (every variable-length field
// is length-prefixed, big-endian):
//
//	"pgonion column key v1" || 0x00
//	|| uint16(len(columnID)) || columnID
//	|| uint8(len(onion))     || onion
//	|| uint8(len(layer))     || layer
//	|| uint16(size)
//
// Domain separation: keys for different columns, onions, layers or sizes
// come from different info strings and so are independent; the length
// prefixes make distinct (columnID, onion, layer, size) tuples give distinct
// info strings (("ab", "c") and ("a", "bc") differ). Including the size
// means a 32-byte key is not a prefix of the 64-byte key for the same
// purpose. The "v1" tags let a later scheme change without reusing keys.
//
// The column id is the column's stable random identifier, not its name, so
// renaming a column keeps its keys. Onion and layer are short names chosen
// by the caller, such as "eq" and "rnd", or "ord" and "ope".
//
// Anyone with the root key can derive every key; the root key must come
// from a cryptographically secure random source and never be logged.
// Derived keys are as secret as the data they protect: a layer key given to
// the server (to peel an RND layer with pgcrypto) reveals that one layer of
// that one column's onion, and nothing about other keys.
//
// # Key store and master key
//
// The keys of a deployment live in a key store file, wrapped (encrypted
// and authenticated) under a master key that is kept apart from it:
//
//	master key (32 random bytes; a file of mode 0600, or $PGONION_MASTER_KEY)
//	  └─ wraps the key store file (AES-256-GCM under a key derived by HKDF)
//	       ├─ root key (32 random bytes) ── Deriver ── every column/onion/layer key
//	       └─ named secrets, e.g. "paillier" (the Paillier key pair, as bytes)
//
// Data keys come from the store's root key (Store.Deriver), never from
// the master key. So the master
// key can be rotated (RotateMaster) by re-wrapping the store, without
// touching any data, and a master key on its own derives nothing.
//
// Threat model. As in CryptDB, the database server and its administrators
// are honest but curious, and the proxy host with its key store and master
// key is trusted. The key store protects the keys at rest, in backups and
// in transit to the proxy host: it is meant to be stored and backed up
// apart from the master key. A stolen key store file without the master
// key reveals its size (and so roughly how many and how large its secrets
// are), its store id, its creation time and when it was last re-wrapped,
// and nothing else: all keys are inside the AES-256-GCM ciphertext, and any
// change to any byte of the file (header or body) makes it fail to open.
// Anyone with both the key store (or an old copy of it) and the master key
// it was wrapped under can derive every data key. The master key never
// appears in errors or logs (MasterKey prints as "[redacted]"); keys in
// process memory are not protected beyond what the Go runtime offers
// (copies made by the garbage collector are not wiped).
//
// # Root key generations
//
// The root key can be replaced (RotateRoot): the new one is of the next
// generation (the first is 0) and becomes current; earlier ones stay in
// the store, so data not yet re-encrypted still decrypts, until
// RetireRoot removes them. The database records each column's generation
// (DeriverAt gives its Deriver). Rotating the root key changes every data
// key; rotating the master key changes none.
//
// File format, version 2 (integers big-endian):
//
//	offset  size  field
//	     0    16  magic "pgonion-keystore"
//	    16     2  format version, 1
//	    18     1  key derivation, 1 = HKDF-SHA256
//	    19     1  cipher, 1 = AES-256-GCM
//	    20    16  store id (random, a version 4 UUID)
//	    36     8  creation time, Unix seconds
//	    44     8  time the file was last written (created or re-wrapped), Unix seconds
//	    52    32  salt (random, new for every write)
//	    84    12  nonce (random, new for every write)
//	    96     4  n, the length of the ciphertext
//	   100     n  ciphertext: AES-256-GCM(key, nonce, payload, associated data = bytes 0..99)
//
// where key = HKDF-SHA256(secret = master key, salt = salt,
// info = "pgonion keystore kek v1", 32 bytes). The file ends exactly after
// the ciphertext. The payload (plaintext) is
//
//	generation    uint32, of the current root key
//	root key      32 bytes, the current one
//	earlier       uint16, the number of earlier root keys kept
//	earlier times, in strictly increasing order of generation (each below
//	the current one):
//	  uint32 generation, 32-byte root key
//	count         uint16, the number of secrets
//	count times, in strictly increasing order of name:
//	  uint8 name length, name (1 to 64 bytes of a-z 0-9 . _ -),
//	  uint32 value length, value (at most 1 MiB)
//
// Version 1, written before root rotation, is read too: its payload is
// the root key (generation 0), the count and the secrets.
//
// A fresh salt per write gives every file its own key-encryption key, so
// the random nonce is never repeated under one key. Opening distinguishes
// a missing file (fs.ErrNotExist), a file that is not a key store, is
// truncated or has another format version (ErrCorrupt,
// ErrUnsupportedVersion), and a file that does not authenticate
// (ErrWrongKeyOrTampered: a wrong master key and a modified file look the
// same to authenticated encryption, and the error says so).
//
// Files are written atomically: to a temporary file (mode 0600) in the same
// directory, synced, then linked (new files; never overwriting) or renamed
// (re-wrapping) into place, and the directory is synced. A crash leaves
// the old file or the new one, and at worst a stray ".NAME.tmp-*" file.
//
// The text form of a master key is "pgonion-master-v1:" followed by the
// 43-character unpadded base64url encoding of its 32 bytes; white space
// around it is ignored.
package keys
