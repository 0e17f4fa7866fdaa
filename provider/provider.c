/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/* Provider registry: the built-in providers, looked up by name. */
#include <string.h>

#include "provider/provider.h"

static const struct rpcrdma_provider_ops *const providers[] = {
	&rpcrdma_iwarp_ops,
#ifdef RPCRDMA_HAVE_VERBS
	&rpcrdma_verbs_ops,
#endif
	NULL,
};

const struct rpcrdma_provider_ops *const *rpcrdma_provider_list(void)
{
	return providers;
}

const struct rpcrdma_provider_ops *rpcrdma_provider_find(const char *name)
{
	if (!name)
		return NULL;
	for (size_t i = 0; providers[i]; i++)
		if (strcmp(providers[i]->name, name) == 0)
			return providers[i];
	return NULL;
}
