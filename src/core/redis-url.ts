/**
 * Redis store addresses: `redis[s]://[user[:password]@]host[:port][,host[:port]...][/db][?options]`.
 * Several hosts are Sentinels (`?sentinel=MASTER`) or Cluster seed nodes (`?cluster=1`). The
 * password never leaves this module except to the connection: messages use `display`.
 */

export interface RedisEndpoint {
  readonly host: string;
  readonly port: number;
}

export interface RedisTarget {
  readonly tls: boolean;
  readonly hosts: readonly RedisEndpoint[];
  readonly username: string | undefined;
  readonly password: string | undefined;
  readonly db: number;
  /** The master's name when the hosts are Sentinels. */
  readonly sentinel: string | null;
  readonly cluster: boolean;
  /** The URL without its password, for every message and listing. */
  readonly display: string;
  /** The server it names, spelled one way (lower-case hosts, ports written out): same key, same store. */
  readonly key: string;
}

/** A URL that cannot be used, with a message that never repeats the password. */
export class RedisUrlError extends Error {}

const SCHEME = /^(rediss?):\/\/(.*)$/s;
// What follows the credentials: hosts, database, options. Credentials end at the last '@', so a
// password may hold any character, and no message below ever quotes it.
const REST = /^([^/?#]+)(?:\/([^?#]*))?(?:\?([^#]*))?$/;
const ENDPOINT = /^(?:\[([0-9A-Fa-f:.]+)\]|([A-Za-z0-9._-]+))(?::(\d{1,5}))?$/;

function decode(part: string, what: string): string {
  try {
    return decodeURIComponent(part);
  } catch {
    throw new RedisUrlError(`the ${what} in the redis URL is not valid percent-encoding`);
  }
}

export function parseRedisUrl(url: string): RedisTarget {
  const shape =
    'the redis URL must look like redis://[user:password@]host[:port][/db] (or rediss:// for TLS)';
  const outer = SCHEME.exec(url.trim());
  if (!outer) throw new RedisUrlError(shape);
  const scheme = outer[1]!;
  const at = outer[2]!.lastIndexOf('@');
  const auth = at === -1 ? undefined : outer[2]!.slice(0, at);
  const match = REST.exec(outer[2]!.slice(at + 1));
  if (!match) throw new RedisUrlError(shape);
  const [, hostList, dbPart, query] = match as unknown as [
    string,
    string,
    string | undefined,
    string | undefined,
  ];
  let username: string | undefined;
  let password: string | undefined;
  if (auth !== undefined && auth !== '') {
    const colon = auth.indexOf(':');
    const user = colon === -1 ? auth : auth.slice(0, colon);
    if (user !== '') username = decode(user, 'user name');
    if (colon !== -1) password = decode(auth.slice(colon + 1), 'password');
  }
  let sentinel: string | null = null;
  let cluster = false;
  for (const pair of (query ?? '').split('&')) {
    if (pair === '') continue;
    const [key, value = ''] = pair.split('=', 2) as [string, string?];
    if (key === 'sentinel' && /^[A-Za-z0-9._-]{1,128}$/.test(value)) sentinel = value;
    else if (key === 'cluster' && (value === '1' || value === 'true')) cluster = true;
    else
      throw new RedisUrlError(
        `unknown redis URL option ${JSON.stringify(pair)} (known: sentinel=NAME, cluster=1)`,
      );
  }
  if (sentinel !== null && cluster)
    throw new RedisUrlError('a redis URL is either sentinel= or cluster=1, not both');
  const defaultPort = sentinel !== null ? 26379 : 6379;
  const hosts = hostList.split(',').map((text) => {
    const endpoint = ENDPOINT.exec(text);
    const port = Number(endpoint?.[3] ?? defaultPort);
    if (!endpoint || port < 1 || port > 65535)
      throw new RedisUrlError(`${JSON.stringify(text)} is not a host[:port] in the redis URL`);
    return { host: endpoint[1] ?? endpoint[2]!, port };
  });
  if (hosts.length > 1 && sentinel === null && !cluster) {
    throw new RedisUrlError('several hosts in a redis URL need ?sentinel=MASTER or ?cluster=1');
  }
  const dbText = dbPart ?? '';
  if (!/^\d{0,2}$/.test(dbText))
    throw new RedisUrlError(`the database in the redis URL must be a number (got ${JSON.stringify(dbText)})`);
  const db = dbText === '' ? 0 : Number(dbText);
  if (cluster && db !== 0) throw new RedisUrlError('a Redis Cluster has only database 0');
  const who = username !== undefined ? `${encodeURIComponent(username)}@` : '';
  const display = `${scheme}://${who}${hostList}${db !== 0 ? `/${db}` : ''}${query ? `?${query}` : ''}`;
  const key = [
    scheme,
    username ?? '',
    hosts.map((h) => `${h.host.toLowerCase()}:${h.port}`).join(','),
    db,
    sentinel ?? '',
    cluster ? 'cluster' : '',
  ].join('|');
  return { tls: scheme === 'rediss', hosts, username, password, db, sentinel, cluster, display, key };
}
