/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * Replay driver for fuzz targets when libFuzzer is not available (gcc
 * builds): runs LLVMFuzzerTestOneInput on every file of the given
 * directories or files, so the checked-in corpus is a regression suite.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		perror(path);
		return 1;
	}
	uint8_t *buf = malloc(1 << 20);
	if (!buf) {
		fclose(f);
		return 1;
	}
	size_t n = fread(buf, 1, 1 << 20, f);
	fclose(f);
	/* Copy into an exact-size allocation so ASan sees over-reads. */
	uint8_t *exact = malloc(n ? n : 1);
	if (!exact) {
		free(buf);
		return 1;
	}
	memcpy(exact, buf, n);
	free(buf);
	LLVMFuzzerTestOneInput(exact, n);
	free(exact);
	return 0;
}

int main(int argc, char **argv)
{
	int runs = 0, errs = 0;
	for (int i = 1; i < argc; i++) {
		struct stat st;
		if (stat(argv[i], &st) != 0)
			continue; /* an empty corpus is not an error */
		if (S_ISDIR(st.st_mode)) {
			DIR *d = opendir(argv[i]);
			struct dirent *de;
			while (d && (de = readdir(d)) != NULL) {
				if (de->d_name[0] == '.')
					continue;
				char p[4096];
				snprintf(p, sizeof p, "%s/%s", argv[i], de->d_name);
				errs += run_file(p);
				runs++;
			}
			if (d)
				closedir(d);
		} else {
			errs += run_file(argv[i]);
			runs++;
		}
	}
	/* Also run a few synthetic inputs so an empty corpus still exercises
	 * the target. */
	static const uint8_t zeros[64];
	for (size_t n = 0; n <= sizeof zeros; n += 4) {
		LLVMFuzzerTestOneInput(zeros, n);
		runs++;
	}
	printf("replayed %d inputs, %d unreadable\n", runs, errs);
	return errs ? 1 : 0;
}
