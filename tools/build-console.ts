// `npm run build:console` (run by `prepare`, so `npm ci` builds it): bundles the console into
// dist/console/. The bundling itself is the server's (src/platform/console-bundle.ts), which also
// builds a missing bundle on the first request.
import { buildConsole, CONSOLE_DIST } from "../src/platform/console-bundle.ts";

await buildConsole();
console.log(`Built the console into ${CONSOLE_DIST}`);
