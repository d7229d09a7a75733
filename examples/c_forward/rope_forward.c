/* A tiny RoPE engine outside Python, judged through roperef's file protocol.
 *
 *   roperef golden export --filter forward/default --out cases
 *   ./rope_forward cases            # writes out_y.npy (or unsupported.txt) in every case folder
 *   roperef check --outputs cases
 *
 * It handles the forward stage, scaling default/linear, pairing half/adjacent, float32/float64
 * inputs, and computes like a typical GPU kernel: inv_freq and angles in float32, cosf/sinf,
 * rotation in float32. Everything else gets unsupported.txt (NOT_SUPPORTED in the report).
 * The .npy reader handles what roperef writes: little-endian, C order, '<f4' '<f8' '<i8'.
 */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct { char descr[8]; long shape[8]; int ndim; long count; void *data; } Npy;

static int read_npy(const char *path, Npy *a) {
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    unsigned char magic[10];
    if (fread(magic, 1, 10, f) != 10 || memcmp(magic, "\x93NUMPY", 6) != 0) { fclose(f); return -1; }
    unsigned long hlen = magic[8] | (magic[9] << 8);
    if (magic[6] >= 2) { unsigned char ext[2]; if (fread(ext, 1, 2, f) != 2) { fclose(f); return -1; } hlen |= (unsigned long)(ext[0] | (ext[1] << 8)) << 16; }
    char *h = calloc(hlen + 1, 1);
    if (fread(h, 1, hlen, f) != hlen) { free(h); fclose(f); return -1; }
    char *d = strstr(h, "'descr': '"), *s = strstr(h, "'shape': (");
    if (!d || !s || strstr(h, "'fortran_order': True")) { free(h); fclose(f); return -1; }
    memset(a, 0, sizeof *a);
    sscanf(d + 10, "%7[^']", a->descr);
    a->count = 1;
    for (char *p = s + 10; *p && *p != ')';) {
        if (*p >= '0' && *p <= '9') { long v = strtol(p, &p, 10); a->shape[a->ndim++] = v; a->count *= v; } else p++;
    }
    free(h);
    size_t item = strcmp(a->descr, "<f4") == 0 ? 4 : 8;
    a->data = malloc(item * (a->count ? a->count : 1));
    if (fread(a->data, item, a->count, f) != (size_t)a->count) { fclose(f); return -1; }
    fclose(f);
    return 0;
}

static void write_npy(const char *path, const char *descr, const long *shape, int ndim, const void *data, size_t bytes) {
    char h[256], dims[128] = "";
    for (int i = 0; i < ndim; i++) { char t[24]; snprintf(t, sizeof t, "%ld,%s", shape[i], (ndim > 1 && i < ndim - 1) ? " " : ""); strcat(dims, t); }
    if (ndim > 1) dims[strlen(dims) - 1] = '\0';
    int n = snprintf(h, sizeof h, "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }", descr, dims);
    int total = ((10 + n + 1 + 63) / 64) * 64;
    int pad = total - 10 - n - 1;
    FILE *f = fopen(path, "wb");
    unsigned short hl = (unsigned short)(total - 10);
    fwrite("\x93NUMPY\x01\x00", 1, 8, f);
    fputc(hl & 0xff, f); fputc(hl >> 8, f);
    fwrite(h, 1, n, f);
    for (int i = 0; i < pad; i++) fputc(' ', f);
    fputc('\n', f);
    fwrite(data, 1, bytes, f);
    fclose(f);
}

static int param(const char *dir, const char *key, char *out, size_t len) {
    char path[4400], line[8192];
    snprintf(path, sizeof path, "%s/params.txt", dir);
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    size_t k = strlen(key);
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, key, k) == 0 && line[k] == '=') {
            line[strcspn(line, "\n")] = '\0';
            snprintf(out, len, "%s", line + k + 1);
            fclose(f);
            return 0;
        }
    }
    fclose(f);
    out[0] = '\0';
    return -1;
}

static void unsupported(const char *dir, const char *why) {
    char path[4400];
    snprintf(path, sizeof path, "%s/unsupported.txt", dir);
    FILE *f = fopen(path, "w");
    fprintf(f, "%s\n", why);
    fclose(f);
}

static void run_case(const char *dir) {
    char stage[64], scaling[64], pairing[64], mrope[64], vision[64], v[64], dtype[32];
    param(dir, "stage", stage, sizeof stage);
    param(dir, "scaling", scaling, sizeof scaling);
    param(dir, "pairing", pairing, sizeof pairing);
    param(dir, "mrope_section", mrope, sizeof mrope);
    param(dir, "vision", vision, sizeof vision);
    param(dir, "dtype", dtype, sizeof dtype);
    if (strcmp(stage, "forward") != 0) { unsupported(dir, "only the forward stage"); return; }
    if (strcmp(scaling, "default") != 0 && strcmp(scaling, "linear") != 0) { unsupported(dir, "only default/linear scaling"); return; }
    if (strcmp(pairing, "half") != 0 && strcmp(pairing, "adjacent") != 0) { unsupported(dir, "only half/adjacent pairing"); return; }
    if (mrope[0] || vision[0]) { unsupported(dir, "no mRoPE / vision"); return; }
    param(dir, "head_dim", v, sizeof v); int D = atoi(v);
    param(dir, "rotary_dim", v, sizeof v); int r = atoi(v);
    param(dir, "rotary_start", v, sizeof v); int start = atoi(v);
    param(dir, "freq_dim", v, sizeof v); int fd = atoi(v);
    param(dir, "theta", v, sizeof v); float theta = (float)atof(v);
    float factor = 1.0f;
    if (param(dir, "scaling.factor", v, sizeof v) == 0) factor = (float)atof(v);
    char path[4400];
    Npy x, pos;
    snprintf(path, sizeof path, "%s/in_x.npy", dir);
    if (read_npy(path, &x) || (strcmp(x.descr, "<f4") && strcmp(x.descr, "<f8"))) { unsupported(dir, "x must be <f4 or <f8"); return; }
    snprintf(path, sizeof path, "%s/in_positions.npy", dir);
    if (read_npy(path, &pos) || strcmp(pos.descr, "<i8")) { unsupported(dir, "positions must be <i8"); return; }
    long H = x.shape[x.ndim - 2], tokens = x.count / (H * D);
    if (pos.count != tokens) { unsupported(dir, "positions must give one position per token"); return; }
    int n = r / 2, is64 = strcmp(x.descr, "<f8") == 0;
    float *w = malloc(sizeof(float) * n), *y = malloc(sizeof(float) * x.count);
    for (int j = 0; j < n; j++) w[j] = 1.0f / powf(theta, (float)(2 * j) / (float)fd) / factor;
    for (long i = 0; i < x.count; i++) y[i] = is64 ? (float)((double *)x.data)[i] : ((float *)x.data)[i];
    const long long *p = pos.data;
    for (long t = 0; t < tokens; t++) {
        for (int j = 0; j < n; j++) {
            float phi = (float)p[t] * w[j], c = cosf(phi), s = sinf(phi);
            int a = strcmp(pairing, "half") == 0 ? start + j : start + 2 * j;
            int b = strcmp(pairing, "half") == 0 ? start + j + n : start + 2 * j + 1;
            for (long h = 0; h < H; h++) {
                float *row = y + (t * H + h) * D;
                float xa = row[a], xb = row[b];
                row[a] = xa * c - xb * s;
                row[b] = xb * c + xa * s;
            }
        }
    }
    snprintf(path, sizeof path, "%s/out_y.npy", dir);
    if (is64) {
        double *y64 = malloc(sizeof(double) * x.count);
        for (long i = 0; i < x.count; i++) y64[i] = y[i];
        for (long i = 0; i < x.count; i++) if ((i % D) < start || (i % D) >= start + r) y64[i] = ((double *)x.data)[i];
        write_npy(path, "<f8", x.shape, x.ndim, y64, sizeof(double) * x.count);
        free(y64);
    } else {
        write_npy(path, "<f4", x.shape, x.ndim, y, sizeof(float) * x.count);
    }
    free(w); free(y); free(x.data); free(pos.data);
}

int main(int argc, char **argv) {
    if (argc != 2) { fprintf(stderr, "usage: %s EXPORT_DIR\n", argv[0]); return 2; }
    DIR *d = opendir(argv[1]);
    if (!d) { perror(argv[1]); return 2; }
    struct dirent *e;
    int done = 0;
    while ((e = readdir(d))) {
        char dir[4096], probe[4200];
        if (e->d_name[0] == '.') continue;
        snprintf(dir, sizeof dir, "%s/%s", argv[1], e->d_name);
        snprintf(probe, sizeof probe, "%s/params.txt", dir);
        FILE *f = fopen(probe, "r");
        if (!f) continue;
        fclose(f);
        run_case(dir);
        done++;
    }
    closedir(d);
    printf("processed %d case(s)\n", done);
    return 0;
}
