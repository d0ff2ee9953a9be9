using Contend.Engine.Protocols.ReactDB;
using Contend.Engine.Runtime;
using Contend.Engine.Storage;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.DependencyInjection.Extensions;
using Microsoft.Extensions.Options;

namespace Contend.Hosting;

/// <summary>Registers a <see cref="ContendEngine"/> or a <see cref="ReactDbEngine"/> (or one of each) with a host.</summary>
public static class ContendServiceCollectionExtensions
{
    /// <summary>
    /// Adds one engine to the host: <see cref="EngineOptions"/> bound from the configuration
    /// section <paramref name="configSectionPath"/> and checked at start-up, the engine and the
    /// <typeparamref name="TSchema"/> that <paramref name="load"/> returns as singletons, and a
    /// hosted service that starts the engine with the host and drains it when the host stops.
    /// </summary>
    /// <typeparam name="TSchema">what the handlers need besides the engine: the programs
    /// <paramref name="load"/> built, say</typeparam>
    /// <param name="services">the host's services</param>
    /// <param name="load">creates and loads every table of the empty database it is given, and
    /// builds the programs against it; runs once, when the engine is first needed (at the
    /// latest when the host starts)</param>
    /// <param name="configSectionPath">the configuration section bound to the options</param>
    /// <returns>the options' builder, to configure them further in code</returns>
    /// <exception cref="InvalidOperationException">an engine was added already</exception>
    public static OptionsBuilder<EngineOptions> AddContend<TSchema>(this IServiceCollection services,
        Func<Database, IServiceProvider, TSchema> load, string configSectionPath = "Contend")
        where TSchema : class
    {
        ArgumentNullException.ThrowIfNull(services);
        ArgumentNullException.ThrowIfNull(load);
        if (services.Any(s => s.ServiceType == typeof(ContendEngine)))
            throw new InvalidOperationException("AddContend: an engine is registered already; a host runs one engine per database, and one database here");
        services.AddSingleton(sp => new ContendHost<TSchema>(sp, load));
        services.AddSingleton(sp => sp.GetRequiredService<ContendHost<TSchema>>().Engine);
        services.AddSingleton(sp => sp.GetRequiredService<ContendHost<TSchema>>().Schema);
        services.AddHostedService(sp => sp.GetRequiredService<ContendHost<TSchema>>());
        services.TryAddEnumerable(ServiceDescriptor.Singleton<IValidateOptions<EngineOptions>>(new CheckedAtStart<EngineOptions>(o => o.Validate())));
        return services.AddOptions<EngineOptions>().BindConfiguration(configSectionPath).ValidateOnStart();
    }

    /// <summary>
    /// Adds one ReactDB engine to the host: <see cref="ReactDbOptions"/> bound from the
    /// configuration section <paramref name="configSectionPath"/> and checked at start-up, the
    /// engine and its <see cref="ReactorDeployment"/> as singletons, and a hosted service that
    /// starts the engine with the host and drains it when the host stops.
    /// </summary>
    /// <param name="services">the host's services</param>
    /// <param name="deploy">creates and loads every table of the empty database it is given and
    /// returns the deployment of reactors over it; runs once, when the engine is first needed
    /// (at the latest when the host starts)</param>
    /// <param name="configSectionPath">the configuration section bound to the options</param>
    /// <returns>the options' builder, to configure them further in code</returns>
    /// <exception cref="InvalidOperationException">a ReactDB engine was added already</exception>
    public static OptionsBuilder<ReactDbOptions> AddReactDb(this IServiceCollection services,
        Func<Database, IServiceProvider, ReactorDeployment> deploy, string configSectionPath = "ReactDB")
    {
        ArgumentNullException.ThrowIfNull(services);
        ArgumentNullException.ThrowIfNull(deploy);
        if (services.Any(s => s.ServiceType == typeof(ReactDbEngine)))
            throw new InvalidOperationException("AddReactDb: a ReactDB engine is registered already; a host runs one per database, and one database here");
        services.AddSingleton(sp => new ReactDbHost(sp, deploy));
        services.AddSingleton(sp => sp.GetRequiredService<ReactDbHost>().Engine);
        services.AddSingleton(sp => sp.GetRequiredService<ReactDbHost>().Engine.Deployment);
        services.AddHostedService(sp => sp.GetRequiredService<ReactDbHost>());
        services.TryAddEnumerable(ServiceDescriptor.Singleton<IValidateOptions<ReactDbOptions>>(new CheckedAtStart<ReactDbOptions>(o => o.Validate())));
        return services.AddOptions<ReactDbOptions>().BindConfiguration(configSectionPath).ValidateOnStart();
    }
}

/// <summary>An engine's own checks of its options (<paramref name="validate"/>, which throws an
/// <see cref="ArgumentException"/> naming the option), run when the host starts rather than at
/// the first request. ReactDB's check of the roots in flight against the deployment's
/// containers waits for the engine: the deployment is made with it.</summary>
internal sealed class CheckedAtStart<TOptions>(Action<TOptions> validate) : IValidateOptions<TOptions> where TOptions : class
{
    public ValidateOptionsResult Validate(string? name, TOptions options)
    {
        try
        {
            validate(options);
            return ValidateOptionsResult.Success;
        }
        catch (ArgumentException e)
        {
            return ValidateOptionsResult.Fail(e.Message);
        }
    }
}
