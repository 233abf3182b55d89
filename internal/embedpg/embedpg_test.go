package embedpg

import (
	"context"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"
)

func TestStartStop(t *testing.T) {
	ctx := context.Background()
	c, err := Start(ctx, Options{Settings: map[string]string{"work_mem": "8MB"}})
	if err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, c.DSN("postgres"))
	if err != nil {
		c.Stop()
		t.Fatal(err)
	}
	var fsync, workMem string
	err = conn.QueryRow(ctx, "SELECT current_setting('fsync'), current_setting('work_mem')").Scan(&fsync, &workMem)
	conn.Close(ctx)
	if err != nil || fsync != "off" || workMem != "8MB" {
		t.Errorf("settings fsync=%q work_mem=%q err=%v", fsync, workMem, err)
	}
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(c.Dir); !os.IsNotExist(err) {
		t.Fatalf("Stop left %s behind", c.Dir)
	}
	if _, err := pgx.Connect(ctx, c.DSN("postgres")+"&connect_timeout=2"); err == nil {
		t.Fatal("server still accepts connections after Stop")
	}
}

func TestFindBinDirWithBadOverride(t *testing.T) {
	t.Setenv("PGBINDIR", t.TempDir())
	if _, err := FindBinDir(); err == nil {
		t.Fatal("an empty PGBINDIR was accepted")
	}
}
