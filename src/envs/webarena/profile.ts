import { FREE_TEXT_SLOT, type StateAbstraction, type Task } from "../../core/index.ts";
import type { SiteName, SiteUrls, WebArenaTask } from "./tasks.ts";

/**
 * WebArena's abstract state, the paper's web meta-representation: the page's URL and title, then its
 * elements one per line, each interactive one with an id, its role and its text; text without an id
 * is context:
 *
 *   url: __SHOPPING__/customer/account/
 *   title: My Account
 *   [3] link "My Wish List"
 *   [7] searchbox "Search entire store here..."
 *   heading "Contact Information"
 *
 * Site URLs are written as WebArena's placeholders (`__SHOPPING__`), so synthetic states do not
 * depend on a deployment and a deployment's pages map onto the same states. Actions are WebArena's
 * id-based grammar (actions.ts).
 */

/** What each site is, what pages it has and what its elements look like: the cold-start grounding of the experience model. */
export interface SiteProfile {
  site: SiteName;
  /** The placeholder its URLs start with. */
  placeholder: string;
  /** One paragraph: the application, its pages, its elements. */
  summary: string;
  /** Its start page as an abstract state. */
  home: string;
}

const el = (lines: string[]) => lines.join("\n");

export const SITE_PROFILES: Record<Exclude<SiteName, "homepage">, SiteProfile> = {
  shopping: {
    site: "shopping",
    placeholder: "__SHOPPING__",
    summary:
      "shopping (One Stop Market, a Magento 2 storefront; signed in as a customer). Pages: home (category menu, search box, featured products), " +
      'category and search results (product cards: [id] link "<product name>", text "$<price>", [id] button "Add to Cart"; sort and page links), ' +
      'product page (name, price, SKU, rating, options as comboboxes, [id] spinbutton "Qty", [id] button "Add to Cart", [id] link "Add to Wish List", tabs Details / More Information / Reviews with a review form), ' +
      'cart and checkout (shipping address form, shipping method radios, [id] button "Place Order"), ' +
      'My Account (My Orders table: order #, date, total, status, [id] link "View Order"; My Wish List; Address Book; Account Information; My Product Reviews), contact us form.',
    home: el([
      "url: __SHOPPING__/",
      "title: One Stop Market",
      '[1] link "My Account"',
      '[2] link "My Wish List"',
      '[3] link "Sign Out"',
      '[4] link "My Cart"',
      '[5] searchbox "Search entire store here..."',
      '[6] button "Search"',
      '[7] menuitem "Beauty & Personal Care"',
      '[8] menuitem "Sports & Outdoors"',
      '[9] menuitem "Clothing, Shoes & Jewelry"',
      '[10] menuitem "Home & Kitchen"',
      '[11] menuitem "Office Products"',
      '[12] menuitem "Tools & Home Improvement"',
      '[13] menuitem "Health & Household"',
      '[14] menuitem "Patio, Lawn & Garden"',
      '[15] menuitem "Electronics"',
      '[16] menuitem "Cell Phones & Accessories"',
      '[17] menuitem "Video Games"',
      '[18] menuitem "Grocery & Gourmet Food"',
      'heading "Product Showcases"',
      '[19] link "Pre-baked Gingerbread House Kit Value Pack"',
      'text "$19.99"',
      '[20] button "Add to Cart"',
      '[21] link "Contact Us"',
    ]),
  },
  shopping_admin: {
    site: "shopping_admin",
    placeholder: "__SHOPPING_ADMIN__",
    summary:
      "shopping_admin (the Magento 2 admin panel of the same store; signed in as admin). Left menu: Dashboard, Sales (Orders, Invoices, Shipments), Catalog (Products, Categories), Customers, Marketing (Cart Price Rules, Catalog Price Rules), Content (Pages), Reports (Products: Bestsellers, Views; Sales; Reviews; Search Terms), Stores, System. " +
      'Grids: a search textbox, [id] button "Filters", rows with [id] link "Edit" or "View", page size and paging. Edit pages: forms of textboxes, comboboxes and switches, e.g. [id] textbox "Product Name", [id] textbox "Price", [id] combobox "Stock Status", [id] button "Save". Report pages: date-range textboxes, [id] button "Show Report", a results table.',
    home: el([
      "url: __SHOPPING_ADMIN__/",
      "title: Dashboard / Magento Admin",
      '[1] link "Dashboard"',
      '[2] link "Sales"',
      '[3] link "Catalog"',
      '[4] link "Customers"',
      '[5] link "Marketing"',
      '[6] link "Content"',
      '[7] link "Reports"',
      '[8] link "Stores"',
      '[9] link "System"',
      'heading "Dashboard"',
      '[10] button "Reload Data"',
      'text "Lifetime Sales $0.00"',
      'text "Average Order $0.00"',
      '[11] tab "Bestsellers"',
      '[12] tab "Most Viewed Products"',
      '[13] tab "New Customers"',
      '[14] tab "Customers"',
      'heading "Last Orders"',
      'text "Customer | Items | Total"',
      'heading "Last Search Terms"',
      'heading "Top Search Terms"',
    ]),
  },
  reddit: {
    site: "reddit",
    placeholder: "__REDDIT__",
    summary:
      'reddit (Postmill, a Reddit-like forum; signed in). Pages: front page and forums (/f/<forum>: submission titles as links, [id] button "Upvote" / "Downvote", comment counts, [id] link "Submit"), ' +
      'a submission (/f/<forum>/<id>/<slug>: title, body, comments with Reply / Upvote buttons, [id] textbox for a comment, [id] button "Post"), ' +
      'Forums list (/forums, alphabetical), submit form (URL or text post: [id] textbox "Title", [id] textbox "Body", [id] combobox "Forum", [id] button "Create submission"), create forum form, user profiles (/user/<name>), Edit biography, messages.',
    home: el([
      "url: __REDDIT__/",
      "title: Postmill",
      '[1] link "Postmill"',
      '[2] link "Forums"',
      '[3] link "Wiki"',
      '[4] searchbox "Search query"',
      '[5] link "Submit"',
      '[6] button "MarvelsGrantMan136"',
      '[7] link "Hot"',
      '[8] link "New"',
      '[9] link "Top"',
      '[10] link "What is the best way to learn Python?"',
      'text "submitted by user123 in /f/learnprogramming"',
      '[11] link "42 comments"',
      '[12] button "Upvote"',
      '[13] button "Downvote"',
      '[14] link "Next"',
    ]),
  },
  gitlab: {
    site: "gitlab",
    placeholder: "__GITLAB__",
    summary:
      'gitlab (a GitLab instance; signed in as byteblaze). Pages: Projects dashboard (project links, [id] link "New project"), a project (/<namespace>/<project>: files, README, stars, forks, left menu: Repository (Files, Commits, Branches, Tags, Contributors), Issues, Merge requests, CI/CD, Members, Settings), ' +
      'issues and merge requests lists (filters by label, author, state; [id] link per item), an issue (title, description, assignee, labels, milestone, due date, comments box, [id] button "Comment"), ' +
      'project members (invite form: [id] textbox "Username or email address", [id] combobox "Select a role", [id] button "Invite"), new project / new issue / new milestone forms, user profile and settings.',
    home: el([
      "url: __GITLAB__/",
      "title: Projects · Dashboard · GitLab",
      '[1] link "Projects"',
      '[2] link "Groups"',
      '[3] link "Issues"',
      '[4] link "Merge requests"',
      '[5] searchbox "Search GitLab"',
      '[6] link "Byte Blaze"',
      'heading "Projects"',
      '[7] link "New project"',
      '[8] tab "Yours"',
      '[9] tab "Starred"',
      '[10] tab "Explore"',
      '[11] textbox "Filter by name"',
      '[12] link "Byte Blaze / a11y-syntax-highlighting"',
      '[13] link "The A11Y Project / a11yproject.com"',
      '[14] link "Primer / design"',
    ]),
  },
  map: {
    site: "map",
    placeholder: "__MAP__",
    summary:
      'map (an OpenStreetMap website). Pages: the map with a search box ([id] textbox "Search", [id] button "Go"; results list of places as links), a place page (name, address, tags table), ' +
      'directions (/directions: [id] textbox "From", [id] textbox "To", [id] combobox with Car / Bicycle / Foot, [id] button "Go"; then distance, time and step list), a node/way/relation page.',
    home: el([
      "url: __MAP__/",
      "title: OpenStreetMap",
      '[1] link "OpenStreetMap"',
      '[2] textbox "Search"',
      '[3] button "Go"',
      '[4] link "Find directions between two points"',
      '[5] link "Edit"',
      '[6] link "History"',
      '[7] link "Export"',
      '[8] button "Zoom In"',
      '[9] button "Zoom Out"',
      '[10] button "Show My Location"',
      'text "Welcome to OpenStreetMap!"',
    ]),
  },
  wikipedia: {
    site: "wikipedia",
    placeholder: "__WIKIPEDIA__",
    summary:
      'wikipedia (an offline Wikipedia served by Kiwix). Pages: a search box ([id] searchbox "Search"), article pages (headings, paragraphs as text, links to other articles, infobox rows as text).',
    home: el([
      "url: __WIKIPEDIA__/",
      "title: Wikipedia",
      "[1] searchbox \"Search 'Wikipedia'\"",
      '[2] button "Go"',
      '[3] link "Main Page"',
      '[4] link "Random"',
    ]),
  },
};

const INTERACTIVE = new Set([
  "link",
  "button",
  "checkbox",
  "radio",
  "tab",
  "menuitem",
  "option",
  "combobox",
  "textbox",
  "searchbox",
  "spinbutton",
  "switch",
  "img",
]);
const TYPABLE = new Set(["textbox", "searchbox", "combobox", "spinbutton"]);
const ELEMENT = /^\[(\d+)\] ([a-zA-Z]+)(?: "(.*)")?\s*$/;

/** The state format and action grammar (the prompt's profile, cold start's grounding). */
export const WEBARENA_FORMAT = `WebArena: self-hosted websites (a shop, its admin panel, a forum, GitLab, a map, Wikipedia). A state is "url: <page URL>" (site URLs written as __SHOPPING__, __SHOPPING_ADMIN__, __REDDIT__, __GITLAB__, __MAP__, __WIKIPEDIA__), "title: <page title>", then the page's elements one per line: interactive ones as [id] role "text" (ids are numbers, unique on the page), plain text as role "text" without an id.
Actions: click [id]; type [id] [text] (types into a textbox and presses Enter); hover [id]; press [key combination]; scroll [down] or scroll [up]; goto [url]; go_back; go_forward; stop [answer] (ends the episode: the answer when the task asks for information, else stop [done]; stop [N/A] when the task cannot be done). An action on an id not on the page changes nothing.
Rewards: 0 for every step; the stop step gets 1 only when the task is completed (the answer is right, or the sites are in the state the task asked for), else 0.`;

/** The profile a reasoning experience model is given: the format, then each site. */
export function webarenaProfile(): string {
  return [WEBARENA_FORMAT, "Sites:", ...Object.values(SITE_PROFILES).map((p) => `- ${p.summary}`)].join("\n");
}

/** The site profile of a task (its first site). */
export function siteProfileOf(task: Pick<WebArenaTask, "sites">): SiteProfile {
  const first = task.sites.find((s): s is Exclude<SiteName, "homepage"> => s in SITE_PROFILES) ?? "shopping";
  return SITE_PROFILES[first];
}

/**
 * The abstract start state of a task: the profiled start page of its site when it starts there,
 * else that site's page at the task's start URL (its navigation, the rest for the model to predict).
 * A generated task (an id `webarena:<n>~…`) starts where its seed task does.
 */
export function webarenaStartState(tasks: readonly WebArenaTask[]): (task: Task) => string {
  const byId = new Map(tasks.map((t) => [t.id, t]));
  return (task) => {
    const known = (task as Partial<WebArenaTask>).sites ? (task as WebArenaTask) : byId.get(task.id.split("~")[0]);
    const profile = known ? siteProfileOf(known) : SITE_PROFILES.shopping;
    const start = known?.start_url?.replace(/\/+$/, "") ?? profile.placeholder;
    if (start === profile.placeholder) return profile.home;
    const nav = profile.home
      .split("\n")
      .filter((l) => ELEMENT.test(l))
      .slice(0, 6);
    return [`url: ${start}`, `title: ${start.slice(profile.placeholder.length) || "/"}`, ...nav].join("\n");
  };
}

/** The web meta-representation as a `StateAbstraction`; `sites` map a deployment's URLs back to placeholders. */
export function webarenaAbstraction(sites: SiteUrls = {}): StateAbstraction {
  // Longer URLs first, so a base that is a prefix of another (a shop and its admin) maps correctly.
  const bases = Object.entries(sites)
    .filter(([, u]) => typeof u === "string" && u !== "")
    .map(([s, u]) => [u!.replace(/\/+$/, ""), `__${s.toUpperCase()}__`] as const)
    .sort((a, b) => b[0].length - a[0].length);
  const toPlaceholders = (text: string) => bases.reduce((t, [url, p]) => t.split(url).join(p), text);
  return {
    env: "webarena",
    profile: webarenaProfile(),
    abstract: (observation) => toPlaceholders(observation.replace(/\r\n/g, "\n")).trim(),
    isState: (state) => /^url: \S/.test(state.trimStart()),
    isTerminal: () => false,
    actions: (state) => {
      const out: string[] = [];
      for (const line of state.split("\n")) {
        const m = ELEMENT.exec(line.trim());
        if (!m || !INTERACTIVE.has(m[2])) continue;
        out.push(`click [${m[1]}]`);
        if (TYPABLE.has(m[2])) out.push(`type [${m[1]}] [${FREE_TEXT_SLOT}]`);
      }
      out.push("scroll [down]", "go_back", `stop [${FREE_TEXT_SLOT}]`);
      return out;
    },
  };
}
