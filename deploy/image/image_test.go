package main

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// imageDir is where build.sh wrote the image: $CPID_IMAGE_DIR, else
// dist/image of the checkout.
func imageDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("CPID_IMAGE_DIR")
	if dir == "" {
		dir = filepath.Join("..", "..", "dist", "image")
	}
	if _, err := os.Stat(filepath.Join(dir, OCIFile)); err != nil {
		if os.Getenv("CPID_VERIFY_DEPLOY") == "" {
			t.Skipf("no image in %s (make image builds it; make verify-deploy builds and checks it): %v", dir, err)
		}
		t.Fatalf("no image: %v", err)
	}
	return dir
}

// untar extracts the tar file into dir.
func untar(t *testing.T, file, dir string) {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := tar.NewReader(f)
	for {
		h, err := r.Next()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, filepath.FromSlash(h.Name))
		if !strings.HasPrefix(p, dir+string(filepath.Separator)) {
			t.Fatalf("%s: entry %q outside the layout", file, h.Name)
		}
		switch h.Typeflag {
		case tar.TypeDir:
			err = os.MkdirAll(p, 0o755)
		case tar.TypeReg:
			var b []byte
			if b, err = io.ReadAll(r); err == nil {
				err = os.WriteFile(p, b, 0o644)
			}
		default:
			t.Fatalf("%s: entry %q of type %c", file, h.Name, h.Typeflag)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// entry is a file of the image's filesystem.
type entry struct {
	hdr  *tar.Header
	data []byte
}

// files reads the image's filesystem, its layers flattened.
func files(t *testing.T, img v1.Image) map[string]entry {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close()
	out := map[string]entry{}
	r := tar.NewReader(rc)
	for {
		h, err := r.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(r)
		if err != nil {
			t.Fatal(err)
		}
		out[strings.TrimSuffix(h.Name, "/")] = entry{h, b}
	}
}

var elfMachine = map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}

// TestImage reads back the image build.sh wrote: the OCI layout's index
// (one image per platform, tagged), each image's user, entrypoint and
// labels, the files of its layer (the static binary of its platform,
// executable; the user in /etc/passwd; the CA bundle; /tmp; the working
// directory owned by the user), the docker-archive of the same image, and
// the binary of this machine's platform run: its commit is the revision
// label. make verify-deploy sets CPID_IMAGE_VERSION and
// CPID_IMAGE_REVISION to what the image must say.
func TestImage(t *testing.T) {
	dir := imageDir(t)
	lay := t.TempDir()
	untar(t, filepath.Join(dir, OCIFile), lay)
	root, err := layout.ImageIndexFromPath(lay)
	if err != nil {
		t.Fatal(err)
	}
	rm, err := root.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(rm.Manifests) != 1 {
		t.Fatalf("index.json: %d manifests, want 1 (the multi-platform index)", len(rm.Manifests))
	}
	tagStr := rm.Manifests[0].Annotations[refName]
	tag, err := name.NewTag(imageName + ":" + tagStr)
	if err != nil || tagStr == "" {
		t.Fatalf("index.json: ref.name %q: %v", tagStr, err)
	}
	idx, err := root.ImageIndex(rm.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Fields(os.Getenv("CPID_IMAGE_PLATFORMS"))
	if len(want) == 0 {
		want = []string{"linux/amd64", "linux/arm64"}
	}
	var got []string
	for _, d := range im.Manifests {
		if d.Platform == nil {
			t.Fatalf("manifest %s without a platform", d.Digest)
		}
		got = append(got, d.Platform.OS+"/"+d.Platform.Architecture)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("platforms %v, want %v", got, want)
	}
	ran := false
	for _, d := range im.Manifests {
		arch := d.Platform.Architecture
		t.Run(arch, func(t *testing.T) {
			img, err := idx.Image(d.Digest)
			if err != nil {
				t.Fatal(err)
			}
			cf := config(t, img, arch)
			fs := files(t, img)
			layers, _ := img.Layers()
			if len(layers) != 1 {
				t.Errorf("%d layers, want 1 (on scratch)", len(layers))
			}
			bin := checkFiles(t, fs, arch)

			// The docker-archive holds the same image (its config), tagged.
			dimg, err := tarball.ImageFromPath(filepath.Join(dir, "cpid-tui-linux-"+arch+".tar"), &tag)
			if err != nil {
				t.Fatalf("docker-archive: %v", err)
			}
			if a, b := must(img.ConfigName()), must(dimg.ConfigName()); a != b {
				t.Errorf("docker-archive config %s, OCI layout's %s", b, a)
			}

			if arch != runtime.GOARCH || runtime.GOOS != "linux" {
				return
			}
			ran = true
			exe := filepath.Join(t.TempDir(), "cpid-tui")
			if err := os.WriteFile(exe, bin, 0o755); err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command(exe, "version", "-o", "json").Output()
			if err != nil {
				t.Fatalf("the image's cpid-tui version: %v", err)
			}
			var v struct{ Version, Commit, Date, Platform string }
			if err := json.Unmarshal(out, &v); err != nil {
				t.Fatalf("version -o json: %v: %s", err, out)
			}
			l := cf.Config.Labels
			if v.Commit != l["org.opencontainers.image.revision"] || v.Platform != "linux/"+arch {
				t.Errorf("the image's binary says commit %q platform %q; its labels say revision %q",
					v.Commit, v.Platform, l["org.opencontainers.image.revision"])
			}
			// A date: the release's stamp (main.stampVersion) is in the
			// binary, and its version is the image's. Without it cpid-tui
			// says what Go recorded (a pseudo-version, or "(devel)").
			if v.Date != "" && v.Version != l["org.opencontainers.image.version"] {
				t.Errorf("the image's binary says version %q, its label %q", v.Version, l["org.opencontainers.image.version"])
			}
			t.Logf("the image's cpid-tui version: %s", bytes.TrimSpace(out))
		})
	}
	if !ran {
		t.Logf("no image for %s/%s: no binary run", runtime.GOOS, runtime.GOARCH)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// config checks the image's configuration and returns it.
func config(t *testing.T, img v1.Image, arch string) *v1.ConfigFile {
	t.Helper()
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	c := cf.Config
	if cf.OS != "linux" || cf.Architecture != arch {
		t.Errorf("config platform %s/%s, want linux/%s", cf.OS, cf.Architecture, arch)
	}
	if c.User != "65532:65532" {
		t.Errorf("user %q, want 65532:65532 (nonroot)", c.User)
	}
	if !slices.Equal(c.Entrypoint, []string{"/cpid-tui"}) || len(c.Cmd) != 0 {
		t.Errorf("entrypoint %q cmd %q, want [/cpid-tui] and none", c.Entrypoint, c.Cmd)
	}
	if c.WorkingDir != "/var/lib/cpid" {
		t.Errorf("working directory %q, want /var/lib/cpid", c.WorkingDir)
	}
	l := c.Labels
	for k, want := range map[string]string{
		"org.opencontainers.image.title":    imageName,
		"org.opencontainers.image.source":   "https://github.com/cpid-dev/cpid",
		"org.opencontainers.image.version":  os.Getenv("CPID_IMAGE_VERSION"),
		"org.opencontainers.image.revision": os.Getenv("CPID_IMAGE_REVISION"),
	} {
		if l[k] == "" || (want != "" && l[k] != want) {
			t.Errorf("label %s = %q, want %q", k, l[k], want)
		}
	}
	if !regexp.MustCompile(`^[0-9a-f]{40}$`).MatchString(l["org.opencontainers.image.revision"]) {
		t.Errorf("label revision %q is not a commit", l["org.opencontainers.image.revision"])
	}
	return cf
}

// checkFiles checks the layer's files and returns the binary.
func checkFiles(t *testing.T, files map[string]entry, arch string) []byte {
	t.Helper()
	var names []string
	for n := range files {
		names = append(names, n)
	}
	slices.Sort(names)
	wantNames := []string{"cpid-tui", "etc", "etc/group", "etc/passwd", "etc/ssl", "etc/ssl/certs",
		"etc/ssl/certs/ca-certificates.crt", "tmp", "var", "var/lib", "var/lib/cpid"}
	if !slices.Equal(names, wantNames) {
		t.Errorf("files %q, want %q", names, wantNames)
	}
	for n, want := range map[string]struct {
		typ      byte
		mode     fs.FileMode
		uid, gid int
	}{
		"cpid-tui":     {tar.TypeReg, 0o755, 0, 0},
		"etc/passwd":   {tar.TypeReg, 0o644, 0, 0},
		"tmp":          {tar.TypeDir, 0o1777, 0, 0},
		"var/lib/cpid": {tar.TypeDir, 0o700, 65532, 65532},
	} {
		h := files[n].hdr
		if h == nil {
			continue
		}
		if h.Typeflag != want.typ || fs.FileMode(h.Mode) != want.mode || h.Uid != want.uid || h.Gid != want.gid {
			t.Errorf("%s: type %c mode %o owner %d:%d, want %c %o %d:%d", n, h.Typeflag, h.Mode, h.Uid, h.Gid,
				want.typ, want.mode, want.uid, want.gid)
		}
	}
	if p := string(files["etc/passwd"].data); !strings.Contains(p, "\nnonroot:x:65532:65532:") {
		t.Errorf("/etc/passwd has no nonroot 65532:\n%s", p)
	}
	if g := string(files["etc/group"].data); !strings.Contains(g, "\nnonroot:x:65532:") {
		t.Errorf("/etc/group has no nonroot 65532:\n%s", g)
	}
	if ca := files["etc/ssl/certs/ca-certificates.crt"].data; bytes.Count(ca, []byte("-----BEGIN CERTIFICATE-----")) < 10 {
		t.Errorf("the CA bundle holds %d certificates", bytes.Count(ca, []byte("-----BEGIN CERTIFICATE-----")))
	}
	bin := files["cpid-tui"].data
	f, err := elf.NewFile(bytes.NewReader(bin))
	if err != nil {
		t.Fatalf("cpid-tui is not an ELF file: %v", err)
	}
	if f.Machine != elfMachine[arch] {
		t.Errorf("cpid-tui is for %s, want %s", f.Machine, elfMachine[arch])
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
			t.Errorf("cpid-tui is dynamically linked (%s): nothing in scratch can load it", p.Type)
		}
	}
	return bin
}
