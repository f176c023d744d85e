/* Publish a config to the snapfs mount argv[1], open it verified, print its binding. */
#include <snapfs.h>
#include <stdio.h>
#include <unistd.h>

int main(int argc, char **argv)
{
        static const char cfg[] = "{\"mcpServers\": {}}\n";
        struct snapfs_binding b;
        struct snapfs_report why = { 0 };
        char text[SNAPFS_BINDING_TEXT_MAX];
        int fd = argc < 2 ? -1 : snapfs_publish(argv[1], cfg, sizeof(cfg) - 1, NULL, &b, &why);

        if (fd >= 0)
                fd = snapfs_open_verified(argv[1], &b, NULL, &why); /* hand fd to a child */
        for (unsigned i = 0; fd < 0 && i < why.n_reasons; i++)
                fprintf(stderr, "%s: %s\n", why.reasons[i].code, why.reasons[i].message);
        if (fd < 0 || snapfs_binding_format(&b, text, sizeof(text)) < 0)
                return fprintf(stderr, "%s\n", snapfs_strerror(fd)), 1;
        printf("%s\n", text);
        return close(fd);
}
