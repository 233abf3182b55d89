package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/pgonion/pgonion/internal/keys"
)

// Default locations of the key store and the master key file. Relative
// paths are relative to the working directory of the proxy.
const (
	defaultKeystore      = "pgonion.keystore"
	defaultMasterKeyFile = "pgonion.master"
)

// keyFlags are the flags that locate the key store and its master key:
// --keystore, --master-key-file (also PGONION_KEYSTORE and
// PGONION_MASTER_KEY_FILE, through parseFlags) and the master key itself
// in PGONION_MASTER_KEY. Every command that needs the keys registers them.
//
// The master key comes from PGONION_MASTER_KEY when that is set and
// --master-key-file is not (neither on the command line nor as
// PGONION_MASTER_KEY_FILE); else from the master key file, by default
// pgonion.master. Setting both is a usage error.
type keyFlags struct {
	keystore      string
	masterKeyFile string
	fs            *flag.FlagSet
	// throwaway keys (the demo's) may be created side by side.
	throwaway bool

	// The master key, once loaded, and where it came from.
	loaded bool
	master keys.MasterKey
	source string
}

func (k *keyFlags) register(fs *flag.FlagSet) {
	k.fs = fs
	fs.StringVar(&k.keystore, "keystore", defaultKeystore, "key store `file` (a relative path is relative to the working directory)")
	fs.StringVar(&k.masterKeyFile, "master-key-file", defaultMasterKeyFile, "`file` holding the master key, readable by its owner only (mode 0600); not used when "+keys.MasterKeyEnv+" holds the master key and this flag is not given")
}

// flagGiven reports whether the flag name was set on the command line or
// from its PGONION_* variable (parseFlags sets those with fs.Set).
func (k *keyFlags) flagGiven(name string) bool {
	given := false
	k.fs.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
}

// masterFromEnv reports whether the master key is to be read from
// PGONION_MASTER_KEY.
func (k *keyFlags) masterFromEnv() (bool, error) {
	if k.loaded {
		return k.source == "$"+keys.MasterKeyEnv, nil
	}
	v, ok := os.LookupEnv(keys.MasterKeyEnv)
	switch {
	case !ok:
		return false, nil
	case k.flagGiven("master-key-file"):
		return false, usagef("both --master-key-file (or PGONION_MASTER_KEY_FILE) and %s are set; give the master key one way only", keys.MasterKeyEnv)
	case strings.TrimSpace(v) == "":
		return false, usagef("%s is set but empty; unset it, or set it to the master key", keys.MasterKeyEnv)
	}
	return true, nil
}

// masterKey loads the master key (once) and describes where it came from.
// After reading PGONION_MASTER_KEY it removes the variable from the
// environment, so that processes the proxy starts (such as the demo's
// PostgreSQL) do not inherit the key.
func (k *keyFlags) masterKey() (keys.MasterKey, string, error) {
	if k.loaded {
		return k.master, k.source, nil
	}
	fromEnv, err := k.masterFromEnv()
	if err != nil {
		return keys.MasterKey{}, "", err
	}
	var source string
	var master keys.MasterKey
	if fromEnv {
		source = "$" + keys.MasterKeyEnv
		master, err = keys.LoadMasterKey("", os.Getenv(keys.MasterKeyEnv))
		os.Unsetenv(keys.MasterKeyEnv)
	} else {
		source = "file " + absPath(k.masterKeyFile)
		master, err = keys.LoadMasterKey(k.masterKeyFile, "")
		if errors.Is(err, fs.ErrNotExist) {
			err = fmt.Errorf("%w\nhint: give the master key with --master-key-file FILE or in %s (without either, the file %s in the working directory is used)", err, keys.MasterKeyEnv, defaultMasterKeyFile)
		}
	}
	if err != nil {
		return keys.MasterKey{}, "", err
	}
	k.loaded, k.master, k.source = true, master, source
	return master, source, nil
}

// open checks and opens the key store with the master key. Its errors say
// what is wrong (missing, corrupt or unreadable store; missing, insecure
// or wrong master key) and what to do.
func (k *keyFlags) open() (*keys.Store, error) {
	// The header first: a missing or corrupt store is reported as such
	// whatever the state of the master key.
	if _, err := keys.ReadHeader(k.keystore); err != nil {
		return nil, err
	}
	master, source, err := k.masterKey()
	if err != nil {
		return nil, err
	}
	s, err := keys.Open(k.keystore, master)
	if errors.Is(err, keys.ErrWrongKeyOrTampered) {
		return nil, fmt.Errorf("%w\nhint: the master key was read from %s", err, source)
	}
	return s, err
}

var keysSubcommands = []command{
	{"init", "create a master key and a key store", runKeysInit},
	{"rotate-master", "re-wrap the key store under a new master key (data keys unchanged)", runKeysRotateMaster},
	{"check", "open the key store with the master key and describe it", runKeysCheck},
	{"rotate", "re-encrypt columns under fresh keys, online ([SCHEMA.]TABLE[.COLUMN] ...)", runKeysRotate},
	{"rotate-root", "replace the root key every key derives from, re-encrypting every column, online", runKeysRotateRoot},
}

func keysUsage(w io.Writer) {
	fmt.Fprintf(w, `Usage: proxy keys SUBCOMMAND [flags]

Manages the key store: the file that holds the keys of the encrypted
columns, encrypted and authenticated under a master key that is kept
apart from it, in a file of mode 0600 or in %s.

Subcommands:
`, keys.MasterKeyEnv)
	for _, c := range keysSubcommands {
		fmt.Fprintf(w, "  %-14s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w, "\nRun 'proxy keys SUBCOMMAND --help' for its flags.")
}

func runKeys(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return usagef("missing subcommand: init, rotate-master, rotate, rotate-root or check")
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		keysUsage(stderr)
		return flag.ErrHelp
	}
	for _, c := range keysSubcommands {
		if c.name == args[0] {
			return c.run(args[1:], stdout, stderr)
		}
	}
	return usagef("unknown subcommand %q: want init, rotate-master, rotate, rotate-root or check", args[0])
}

// keysFlagSet returns the flag set of `proxy keys NAME`.
func keysFlagSet(name, synopsis, about string) *flag.FlagSet {
	fs := flag.NewFlagSet("keys "+name, flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: proxy keys %s %s\n\n%s\n\nFlags (each also settable as PGONION_<NAME>):\n", name, synopsis, about)
		fs.PrintDefaults()
	}
	return fs
}

func runKeysInit(args []string, stdout, stderr io.Writer) error {
	fs := keysFlagSet("init", "[--keystore FILE] [--master-key-file FILE] [--use-existing-master]", strings.TrimSpace(`
Creates a new key store, and a new master key in --master-key-file (mode
0600), unless the master key is in `+keys.MasterKeyEnv+` or
--use-existing-master is given. Never overwrites a file: an existing key
store may hold the keys of encrypted data.

Back up the master key and the key store, separately: anyone with both can
decrypt every encrypted column, and without either the data is lost.`))
	var k keyFlags
	k.register(fs)
	useExisting := fs.Bool("use-existing-master", false, "create the key store under the master key already in --master-key-file, instead of refusing because that file exists")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	fromEnv, err := k.masterFromEnv()
	if err != nil {
		return err
	}
	if !fromEnv && samePath(k.keystore, k.masterKeyFile) {
		return usagef("--keystore and --master-key-file name the same file; keep the master key apart from the key store")
	}
	storeName := absPath(k.keystore)
	if exists(k.keystore) {
		return fmt.Errorf("key store %s already exists; refusing to overwrite it (it may hold the keys of encrypted data)\nhint: 'proxy keys check' describes it; to create a new one, choose another --keystore", storeName)
	}
	var master keys.MasterKey
	var masterLine string
	createdMaster := false
	switch masterName := absPath(k.masterKeyFile); {
	case fromEnv:
		if master, _, err = k.masterKey(); err != nil {
			return err
		}
		masterLine = "master key:     from " + keys.MasterKeyEnv + " (no master key file written)"
	case *useExisting:
		if !exists(k.masterKeyFile) {
			return fmt.Errorf("--use-existing-master: master key file %s does not exist\nhint: without --use-existing-master, 'proxy keys init' creates it", masterName)
		}
		if master, _, err = k.masterKey(); err != nil {
			return err
		}
		masterLine = "master key:     existing file " + masterName
	case exists(k.masterKeyFile):
		return fmt.Errorf("master key file %s already exists; refusing to overwrite it\nhint: add --use-existing-master to create the key store under the master key in that file", masterName)
	default:
		master = keys.GenerateMasterKey()
		if err := keys.WriteMasterKeyFile(k.masterKeyFile, master); err != nil {
			return err
		}
		createdMaster = true
		masterLine = "created master key file " + masterName + " (mode 0600)"
	}
	s, err := newKeyStore()
	if err != nil {
		return err
	}
	if err := keys.Create(k.keystore, master, s); err != nil {
		if createdMaster {
			err = fmt.Errorf("%w\nhint: the master key file %s was created; rerun with --use-existing-master to use it, or delete it", err, absPath(k.masterKeyFile))
		}
		return err
	}
	fmt.Fprintln(stdout, masterLine)
	fmt.Fprintf(stdout, "created key store %s (mode 0600)\n", storeName)
	fmt.Fprintf(stdout, "store id:       %s\n", s.ID())
	fmt.Fprintf(stdout, "format version: %d\n", s.Version())
	fmt.Fprint(stdout, `
Back up the master key and the key store now, separately, and keep the two
backups apart: anyone who has both can decrypt every encrypted column, and
without either the encrypted data cannot be recovered.
`)
	return nil
}

func runKeysRotateMaster(args []string, stdout, stderr io.Writer) error {
	fs := keysFlagSet("rotate-master", "--new-master-key-file NEW [--keystore FILE] [--master-key-file OLD]", strings.TrimSpace(`
Re-wraps the key store under a new master key, atomically. The data keys
do not change, so no data is re-encrypted. The new master key is read from
NEW, or generated into NEW (mode 0600) if NEW does not exist. The old master
key comes from --master-key-file or `+keys.MasterKeyEnv+`; its file is left in
place.`))
	var k keyFlags
	k.register(fs)
	newFile := fs.String("new-master-key-file", "", "`file` of the new master key; generated (mode 0600) if it does not exist")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *newFile == "" {
		return usagef("--new-master-key-file is required (e.g. --new-master-key-file pgonion.master.%s)", time.Now().Format("20060102"))
	}
	fromEnv, err := k.masterFromEnv()
	if err != nil {
		return err
	}
	if !fromEnv && samePath(k.masterKeyFile, *newFile) {
		return usagef("--new-master-key-file must differ from --master-key-file")
	}
	if samePath(k.keystore, *newFile) {
		return usagef("--new-master-key-file must differ from --keystore")
	}
	// Open the store with the old master key before creating anything.
	s, err := k.open()
	if err != nil {
		return err
	}
	oldMaster, oldSource, err := k.masterKey()
	if err != nil {
		return err
	}
	newName := absPath(*newFile)
	var newMaster keys.MasterKey
	newLine := "using the existing master key file " + newName
	if exists(*newFile) {
		if newMaster, err = keys.LoadMasterKey(*newFile, ""); err != nil {
			return fmt.Errorf("new master key: %w", err)
		}
		if newMaster.Equal(oldMaster) {
			return fmt.Errorf("the new master key in %s is the same as the old one", newName)
		}
	} else {
		newMaster = keys.GenerateMasterKey()
		if err := keys.WriteMasterKeyFile(*newFile, newMaster); err != nil {
			return err
		}
		newLine = "generated new master key file " + newName + " (mode 0600)"
	}
	// The new master key file is durable before the store is re-wrapped,
	// so a crash at any point leaves a master key that opens the store.
	if err := keys.RotateMaster(k.keystore, oldMaster, newMaster); err != nil {
		return fmt.Errorf("%w\nhint: the new master key file %s is kept; 'proxy keys check' with each master key tells which one opens the key store", err, newName)
	}
	fmt.Fprintln(stdout, newLine)
	fmt.Fprintf(stdout, "re-wrapped key store %s under the new master key\n", absPath(k.keystore))
	fmt.Fprintf(stdout, "store id:       %s (data keys unchanged: no data needs re-encryption)\n", s.ID())
	oldWhat := "the old master key file " + absPath(k.masterKeyFile)
	if oldSource == "$"+keys.MasterKeyEnv {
		oldWhat = "the old master key in " + keys.MasterKeyEnv
	}
	fmt.Fprintf(stdout, `
From now on give the proxy --master-key-file %s.
The old master key no longer opens the key store, but it still opens every
copy of the key store made before now. Replace all backups of the key store
with the re-wrapped one, then delete %s.
If the old master key and a copy of the key store may both have leaked,
rotating the master key is not enough: the data keys themselves are exposed.
`, newName, oldWhat)
	return nil
}

func runKeysCheck(args []string, stdout, stderr io.Writer) error {
	fs := keysFlagSet("check", "[--keystore FILE] [--master-key-file FILE]", strings.TrimSpace(`
Opens the key store with the master key, which checks that the master key
is right and that the file is intact, and describes the store. Prints no
key. Exits with status 1 and the reason if the store cannot be opened.`))
	var k keyFlags
	k.register(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	s, err := k.open()
	if err != nil {
		return err
	}
	_, source, _ := k.masterKey()
	secrets := strings.Join(s.SecretNames(), ", ")
	if secrets == "" {
		secrets = "(none)"
	}
	fmt.Fprintf(stdout, "key store:      %s\n", absPath(k.keystore))
	fmt.Fprintf(stdout, "store id:       %s\n", s.ID())
	fmt.Fprintf(stdout, "format version: %d\n", s.Version())
	fmt.Fprintf(stdout, "created:        %s\n", s.Created().Format(time.RFC3339))
	fmt.Fprintf(stdout, "last written:   %s\n", s.Wrapped().Format(time.RFC3339))
	fmt.Fprintf(stdout, "master key:     %s\n", source)
	root := fmt.Sprintf("generation %d", s.Generation())
	if gens := s.Generations(); len(gens) > 1 {
		root += fmt.Sprintf(" (earlier ones kept until a rotation ends: %v)", gens[:len(gens)-1])
	}
	fmt.Fprintf(stdout, "root key:       %s\n", root)
	fmt.Fprintf(stdout, "secrets:        %s\n", secrets)
	fmt.Fprintln(stdout, "ok: the master key opens the key store, and the file is intact")
	return nil
}

// absPath returns path made absolute, for messages that must be clear
// whatever the working directory.
func absPath(path string) string {
	if a, err := filepath.Abs(path); err == nil {
		return a
	}
	return path
}

// exists reports whether something (a file, or even a dangling symbolic
// link) is at path, or whether it cannot tell: either way, nothing must be
// created there.
func exists(path string) bool {
	_, err := os.Lstat(path)
	return !errors.Is(err, fs.ErrNotExist)
}

// sameDir reports whether the files a and b are in the same directory.
func sameDir(a, b string) bool {
	return samePath(filepath.Dir(absPath(a)), filepath.Dir(absPath(b)))
}

// samePath reports whether a and b name the same file.
func samePath(a, b string) bool {
	if absPath(a) == absPath(b) {
		return true
	}
	fa, err1 := os.Stat(a)
	fb, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(fa, fb)
}
