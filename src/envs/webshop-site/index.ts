export { WebShopSite } from "./webshop-site.ts";
export type { WebShopSiteOptions } from "./webshop-site.ts";
export { webshopApp } from "./app.ts";
export type { SiteSession, WebShopAppOptions } from "./app.ts";
export { urls as webshopUrls, searchPageHtml, resultsPageHtml, itemPageHtml, subPageHtml, donePageHtml } from "./html.ts";
export {
  createWebShopBrowserEnv,
  webshopBrowserAbstraction,
  webshopBrowserPage,
  webshopBrowserStartState,
  webshopBrowserDoneState,
  webshopBrowserVerifier,
  BrowserOraclePolicy,
  BrowserRulePolicy,
} from "./browser-support.ts";
export type { WebShopBrowserOptions, WebShopBrowserPage } from "./browser-support.ts";
export { WebShopPagesEnv } from "./page-env.ts";
export type { WebShopPagesOptions } from "./page-env.ts";
